"""Claude on Amazon Bedrock and Google Vertex AI, through the SDK's own platform clients.

:class:`BedrockProvider` wraps ``AsyncAnthropicBedrock`` (SigV4-signed requests to
``/model/{id}/invoke-with-response-stream``, answers in AWS event-stream framing, decoded by
the SDK with botocore); :class:`VertexProvider` wraps ``AsyncAnthropicVertex``
(``…/publishers/anthropic/models/{id}:streamRawPredict`` with a Google access token). Both
are the Anthropic provider otherwise: the same request parameters, retry loop, stream
assembly and error tree. The platforms' extras (``.[bedrock]``: boto3 and botocore;
``.[vertex]``: google-auth) are imported only when the platform is chosen.

What differs:

* **No Models API.** The window, thinking modes and server tools come from the pod's table
  (:mod:`orchestrator.adapters.providers.platform_models`); :meth:`PlatformProvider.
  start_note` says once at start what the platform lacks (and when the table does not know
  the model).
* **Their error names.** Bedrock names a failure in its ``x-amzn-ErrorType`` header or an
  event-stream exception frame (``ThrottlingException``, ``ServiceUnavailableException``…);
  Vertex's own front end answers in Google's shape (``{"error": {"status":
  "RESOURCE_EXHAUSTED"}}``) and passes the Anthropic API's errors through. Each is read as
  the Anthropic error type it means (:data:`BEDROCK_ERRORS`, :data:`VERTEX_STATUSES`), so
  retries and ``fallback_on`` treat them alike.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import anthropic

from orchestrator.adapters.providers.anthropic import AnthropicProvider
from orchestrator.adapters.providers.base import AlertCallback, ProviderConfigError
from orchestrator.adapters.providers.platform_models import (
    PLATFORM_NAMES,
    TABLE_DATE,
    Platform,
    family,
    platform_model,
    platform_web,
)
from orchestrator.config.model import PodConfig
from orchestrator.core.thinking import ModelThinking
from orchestrator.core.web import ModelWeb

__all__ = [
    "BEDROCK_ERRORS",
    "VERTEX_STATUSES",
    "BedrockProvider",
    "PlatformProvider",
    "VertexProvider",
    "platform_provider",
]

BEDROCK_ERRORS: dict[str, str] = {
    "throttlingexception": "rate_limit_error",
    "servicequotaexceededexception": "rate_limit_error",
    "serviceunavailableexception": "overloaded_error",
    "modelnotreadyexception": "overloaded_error",
    "internalserverexception": "api_error",
    "modelstreamerrorexception": "api_error",
    "modeltimeoutexception": "timeout_error",
    "resourcenotfoundexception": "not_found_error",
    "accessdeniedexception": "permission_error",
    "validationexception": "invalid_request_error",
    "modelerrorexception": "api_error",
}
"""Bedrock's exception names (any case) as the Anthropic error types they mean."""

VERTEX_STATUSES: dict[str, str] = {
    "RESOURCE_EXHAUSTED": "rate_limit_error",
    "UNAVAILABLE": "overloaded_error",
    "INTERNAL": "api_error",
    "NOT_FOUND": "not_found_error",
    "PERMISSION_DENIED": "permission_error",
    "UNAUTHENTICATED": "authentication_error",
    "INVALID_ARGUMENT": "invalid_request_error",
    "DEADLINE_EXCEEDED": "timeout_error",
}
"""Google's error statuses (Vertex's own front end) as the Anthropic error types they mean."""

_EXTRAS: dict[Platform, tuple[str, str]] = {
    "bedrock": ("boto3", "boto3 and botocore"),
    "vertex": ("google.auth", "google-auth"),
}


def _need_extra(platform: Platform) -> None:
    """ProviderConfigError naming the install command when the platform's extra is missing."""
    module, brings = _EXTRAS[platform]
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        found = False
    if not found:
        raise ProviderConfigError(
            f'provider = "{platform}" needs the {platform} extra: '
            f"pip install 'pod-orchestrator[{platform}]' (it brings {brings})"
        )


class PlatformProvider(AnthropicProvider):
    """The Anthropic provider on a cloud platform: capabilities from the pod's table."""

    platform: Platform

    async def context_window(self) -> int | None:
        """The table's window for the model; None when it does not list it."""
        row = platform_model(self.model)
        return row.window if row is not None else None

    async def thinking_capabilities(self) -> ModelThinking | None:
        """The table's thinking modes for the model; None when it does not list it."""
        row = platform_model(self.model)
        return row.thinking(self.model) if row is not None else None

    async def web_capabilities(self) -> ModelWeb | None:
        """No server tools on the platform (see platform_models)."""
        return platform_web(self.model, self.platform)

    def start_note(self) -> str | None:
        """What the platform lacks, said once when the pod starts."""
        where = PLATFORM_NAMES[self.platform]
        row = platform_model(self.model)
        if row is None:
            known = (
                f"the pod's capability table ({TABLE_DATE}) does not know {self.model} "
                f"(family {family(self.model)!r}): thinking and the window are unknown, so "
                '"auto" thinking is off; set thinking and context_window to use them'
            )
        else:
            known = (
                f"{self.model}: window {row.window:,} tokens and thinking from the pod's "
                f"capability table ({TABLE_DATE})"
            )
        return (
            f"{where} has no Models API: {known}. Web search and the API's web fetch are off "
            "there (the pod's own web_fetch runs instead), and so is the API's request-level "
            "fallback; docs/providers.md"
        )

    def _error_body(self, err: anthropic.APIStatusError) -> dict[str, Any]:
        body = err.body
        return body if isinstance(body, dict) else {}


class BedrockProvider(PlatformProvider):
    """Claude on Amazon Bedrock (``provider = "bedrock"``): ``region`` and ``profile`` from
    ``[bedrock]``, else the AWS environment and files; ``base_url`` (tests) else the SDK's
    (``ANTHROPIC_BEDROCK_BASE_URL``, else the region's endpoint)."""

    name = "bedrock"
    platform: Platform = "bedrock"

    def __init__(
        self,
        model: str,
        *,
        region: str | None = None,
        profile: str | None = None,
        base_url: str | None = None,
        **settings: Any,
    ) -> None:
        _need_extra("bedrock")
        super().__init__(model, base_url=base_url, **settings)
        self.region = region
        self.profile = profile

    def with_model(self, model: str) -> BedrockProvider:
        """The same region, profile and endpoint for ``model`` (the fallback's)."""
        return BedrockProvider(
            model,
            region=self.region,
            profile=self.profile,
            base_url=self._base_url,
            **self._settings(),
        )

    def _new_client(self) -> Any:
        try:
            return anthropic.AsyncAnthropicBedrock(
                aws_region=self.region,
                aws_profile=self.profile,
                base_url=self._base_url,
                max_retries=0,
                timeout=anthropic.Timeout(self.timeout_s, connect=min(self.timeout_s, 10.0)),
            )
        except (ValueError, anthropic.AnthropicError) as err:
            raise ProviderConfigError(f"Amazon Bedrock cannot be reached: {err}") from None

    def _error_type(self, err: anthropic.APIStatusError) -> str | None:
        name = err.type or err.response.headers.get("x-amzn-errortype", "").split(":")[0]
        if not name:
            return None
        return BEDROCK_ERRORS.get(name.lower(), name)


class VertexProvider(PlatformProvider):
    """Claude on Google Vertex AI (``provider = "vertex"``): ``project_id`` and ``region``
    from ``[vertex]``, else ``ANTHROPIC_VERTEX_PROJECT_ID`` / ``CLOUD_ML_REGION`` and the
    application-default credentials; ``base_url`` (tests) else the SDK's."""

    name = "vertex"
    platform: Platform = "vertex"

    def __init__(
        self,
        model: str,
        *,
        region: str | None = None,
        project_id: str | None = None,
        base_url: str | None = None,
        **settings: Any,
    ) -> None:
        _need_extra("vertex")
        super().__init__(model, base_url=base_url, **settings)
        self.region = region
        self.project_id = project_id

    def with_model(self, model: str) -> VertexProvider:
        """The same project, region and endpoint for ``model`` (the fallback's)."""
        return VertexProvider(
            model,
            region=self.region,
            project_id=self.project_id,
            base_url=self._base_url,
            **self._settings(),
        )

    def _new_client(self) -> Any:
        optional: dict[str, Any] = {}
        if self.region is not None:
            optional["region"] = self.region
        if self.project_id is not None:
            optional["project_id"] = self.project_id
        try:
            return anthropic.AsyncAnthropicVertex(
                base_url=self._base_url,
                max_retries=0,
                timeout=anthropic.Timeout(self.timeout_s, connect=min(self.timeout_s, 10.0)),
                **optional,
            )
        except (ValueError, anthropic.AnthropicError) as err:
            raise ProviderConfigError(f"Google Vertex AI cannot be reached: {err}") from None

    def _error_type(self, err: anthropic.APIStatusError) -> str | None:
        if err.type:
            return err.type  # the Anthropic API's own error, passed through
        error = self._error_body(err).get("error")
        status = error.get("status") if isinstance(error, dict) else None
        return VERTEX_STATUSES.get(status, status) if isinstance(status, str) else None


def platform_provider(config: PodConfig, *, on_alert: AlertCallback | None) -> PlatformProvider:
    """The provider of ``config``'s cloud platform (``provider = "bedrock"`` or
    ``"vertex"``); ProviderConfigError says what is missing (the extra, a region)."""
    settings: dict[str, Any] = {
        "max_retries": config.provider_max_retries,
        "timeout_s": config.provider_timeout_s,
        "on_alert": on_alert,
    }
    if config.resolved_provider() == "bedrock":
        return BedrockProvider(
            config.model, region=config.bedrock.region, profile=config.bedrock.profile, **settings
        )
    return VertexProvider(
        config.model,
        region=config.vertex.region,
        project_id=config.vertex.project_id,
        **settings,
    )
