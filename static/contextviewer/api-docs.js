/* /api/docs: starts the vendored Swagger UI (static/vendor/swagger-ui) from data attributes,
 * so the page needs no inline script under the app's CSP. */
(function () {
  "use strict";

  function start() {
    var root = document.getElementById("swagger-ui");
    if (!root || typeof window.SwaggerUIBundle !== "function") return;
    var settings = {};
    try {
      settings = JSON.parse(root.getAttribute("data-settings") || "{}");
    } catch (e) {
      settings = {};
    }
    settings.url = root.getAttribute("data-openapi-url");
    settings.dom_id = "#swagger-ui";
    settings.presets = [window.SwaggerUIBundle.presets.apis];
    var csrf = root.getAttribute("data-csrf-token");
    if (csrf) {
      settings.requestInterceptor = function (request) {
        request.headers["X-CSRFToken"] = csrf;
        return request;
      };
    }
    window.ui = window.SwaggerUIBundle(settings);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
