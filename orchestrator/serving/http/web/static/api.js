// The HTTP API as the page uses it: JSON in and out, the cookie set by /?token= as the
// credential, and every refusal as an ApiError carrying the API's code and message.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export async function api(path, { method = "GET", body } = {}) {
  const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = (data && data.error) || {};
    throw new ApiError(response.status, error.code || "http_error", error.message || `HTTP ${response.status}`);
  }
  return data;
}

export function podPath(name, rest = "") {
  return `/v1/pods/${encodeURIComponent(name)}${rest}`;
}

export function chartUrl(path) {
  // A new URL each time: the chart is drawn again from the pod's stats now.
  return `${path}?t=${Date.now()}`;
}
