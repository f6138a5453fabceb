// The page: the list of pods (#/) or one pod (#/pod/<name>), chosen by the address's hash.

import { byId } from "./dom.js";
import { PodView } from "./pod.js";
import { PodList } from "./pods.js";

function say(what) {
  const notice = byId("notice");
  const text = what instanceof Error ? `${what.code ? what.code + ": " : ""}${what.message}` : String(what || "");
  notice.textContent = text;
  notice.classList.toggle("error", what instanceof Error);
}

const list = new PodList((error) => {
  byId("host-summary").textContent = error.message;
});
const pod = new PodView(say);

function route() {
  const match = /^#\/pod\/(.+)$/.exec(window.location.hash);
  const name = match ? decodeURIComponent(match[1]) : null;
  byId("list-view").hidden = name !== null;
  byId("pod-view").hidden = name === null;
  if (name === null) {
    pod.close();
    list.start();
    document.title = "pods";
  } else {
    list.stop();
    if (pod.name !== name) pod.open(name);
    document.title = `${name} · pods`;
  }
}

window.addEventListener("hashchange", route);
route();
