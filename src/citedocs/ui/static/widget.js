// citedocs widget loader, served at /widget.js. One tag on any page:
//   <script src="https://HOST/widget.js" data-corpus="astro" defer></script>
// Optional: data-title, data-placeholder, data-accent (a CSS colour), data-position
// (bottom-right | bottom-left), data-shortcut (e.g. "mod+k", the default, or "none"), data-key (a
// publishable key, when the server requires keys), data-language (e.g. "ru": the widget's words and
// every answer's; by default the page's <html lang> for the widget, the question's for an answer). A classic script, so that `defer` and
// document.currentScript work; the widget itself is ES modules shared with the chat page, loaded
// from the same server into a Shadow DOM (the host page's CSS cannot reach it, its CSS cannot leak).
(() => {
  const script = document.currentScript;
  if (!script || window.__citedocsWidgetLoaded) return;
  window.__citedocsWidgetLoaded = true;
  const server = new URL("./", script.src); // the citedocs server, also when it is served under a path
  const host = document.createElement("div");
  host.id = "citedocs-widget";
  // out of the page's flow whatever the page's CSS says: the widget's parts are position: fixed
  host.style.cssText = "all: initial; position: fixed; top: 0; left: 0; width: 0; height: 0; z-index: 2147483000;";
  const root = host.attachShadow({ mode: "open" });
  const mount = () => {
    document.body.append(host);
    import(new URL("static/widget-app.js", server).href)
      .then((app) => app.mount(root, { server: server.href.replace(/\/$/, ""), ...script.dataset }))
      .catch((err) => console.error(`citedocs widget: could not load from ${server.href}:`, err));
  };
  if (document.body) mount();
  else document.addEventListener("DOMContentLoaded", mount, { once: true });
})();
