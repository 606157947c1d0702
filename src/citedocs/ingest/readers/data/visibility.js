// Which text of a laid-out page a reader sees. Run by citedocs' renderer (readers/render.py) in
// headless Chromium after the page is laid out, with the page's own scripts disabled.
// Returns {text: [[parent, previous, reason]...], alt: [[element, reason]...]}: each text run a
// reader does not see (by the data-cd numbers of its parent and of the element before it, -1: none,
// -2: an element the browser added)
// and each image whose alt text is not shown, with why.
(() => {
  const MIN_PX = 4; // text whose glyphs are less than 4 px tall cannot be read
  const MIN_CONTRAST = 1.2; // WCAG contrast ratio under which text melts into its background
  const style = new Map();
  const cs = (el) => {
    let s = style.get(el);
    if (!s) style.set(el, (s = getComputedStyle(el)));
    return s;
  };
  const id = (el) => (el.dataset && el.dataset.cd !== undefined ? Number(el.dataset.cd) : -2); // -2: an element the browser added

  // What a reader reaches with one click or by scrolling is shown: closed <details>, inactive tab
  // panels, content-visibility:auto (rendered once scrolled to), the inside of scroll containers.
  for (const d of document.querySelectorAll("details")) d.open = true;
  const panels = "[role=tabpanel], .tabbed-set .tabbed-block, .sd-tab-set .sd-tab-content";
  for (const p of document.querySelectorAll(panels)) {
    const inWidget = p.getAttribute("role") !== "tabpanel" || [p.parentElement, p.parentElement?.parentElement, p.parentElement?.parentElement?.parentElement].some((a) => a && a.querySelector("[role=tablist]"));
    if (inWidget && cs(p).display === "none") {
      p.removeAttribute("hidden");
      p.style.setProperty("display", "block", "important");
    }
  }
  for (const el of document.querySelectorAll("*")) {
    if (cs(el).contentVisibility === "auto") el.style.setProperty("content-visibility", "visible", "important");
  }
  style.clear(); // the changes above restyle the page

  const canvas = document.createElement("canvas").getContext("2d", { willReadFrequently: true });
  const colours = new Map();
  const rgba = (value) => {
    // any CSS colour (rgb, oklch, color(), named) as [r, g, b, a], through the canvas
    if (!colours.has(value)) {
      canvas.clearRect(0, 0, 1, 1);
      canvas.fillStyle = "rgba(0,0,0,0)";
      canvas.fillStyle = value;
      canvas.fillRect(0, 0, 1, 1);
      const [r, g, b, a] = canvas.getImageData(0, 0, 1, 1).data;
      colours.set(value, [r, g, b, a / 255]);
    }
    return colours.get(value);
  };
  const luminance = ([r, g, b]) => {
    const c = [r, g, b].map((v) => (v /= 255) <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const contrast = (a, b) => {
    const [x, y] = [luminance(a), luminance(b)];
    return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
  };
  const opacity = (el) => {
    let o = 1;
    for (let a = el; a; a = a.parentElement) o *= Number(cs(a).opacity);
    return o;
  };
  // the colour behind an element: its own or an ancestor's background; null when an image is there
  const background = (el) => {
    for (let a = el; a; a = a.parentElement) {
      const s = cs(a);
      if (s.backgroundImage !== "none") return null;
      const c = rgba(s.backgroundColor);
      if (c[3] >= 0.5) return c;
    }
    return [255, 255, 255, 1]; // the canvas
  };

  const hiddenBy = (el) => {
    // why an element's box shows nothing of its content, by what the browser computed
    if (el.closest("noscript")) return "<noscript>";
    if (el.checkVisibility({ visibilityProperty: true, contentVisibilityAuto: false })) return null;
    let outermost = "visibility:hidden";
    for (let a = el; a; a = a.parentElement) {
      const s = cs(a);
      if (s.display === "none") outermost = a.hasAttribute("hidden") ? "hidden attribute" : "display:none";
      else if (s.contentVisibility === "hidden" && a !== el) outermost = "content-visibility:hidden";
    }
    return outermost;
  };

  // the boxes that clip an element's content: overflow hidden/clip, contain:paint, clip:rect, in
  // its containing-block chain (a positioned box escapes the overflow of static ancestors)
  const clipsOf = (el) => {
    const boxes = [];
    let position = "static";
    for (let a = el; a && a !== document.documentElement; a = a.parentElement) {
      const s = cs(a);
      const contains = s.transform !== "none" || s.filter !== "none" || /paint|strict|content|layout/.test(s.contain);
      if (a !== el && ((position === "fixed" && !contains) || (position === "absolute" && s.position === "static" && !contains))) continue;
      const r = a.getBoundingClientRect();
      const x = ["hidden", "clip"].includes(s.overflowX), y = ["hidden", "clip"].includes(s.overflowY);
      const scrolls = (v) => ["auto", "scroll"].includes(v);
      const box = { left: -Infinity, top: -Infinity, right: Infinity, bottom: Infinity };
      if (x || /paint|strict|content/.test(s.contain) || (scrolls(s.overflowX) && a.clientWidth === 0)) [box.left, box.right] = [r.left, r.right];
      if (y || /paint|strict|content/.test(s.contain) || (scrolls(s.overflowY) && a.clientHeight === 0)) [box.top, box.bottom] = [r.top, r.bottom];
      const clip = (["absolute", "fixed"].includes(s.position) && s.clip.match(/rect\(([^)]*)\)/)) || null;
      if (clip) {
        const [t, rt, b, l] = clip[1].split(/[ ,]+/).map((v) => (v === "auto" ? null : parseFloat(v)));
        box.top = Math.max(box.top, r.top + (t ?? -Infinity));
        box.right = Math.min(box.right, rt === null ? Infinity : r.left + rt);
        box.bottom = Math.min(box.bottom, b === null ? Infinity : r.top + b);
        box.left = Math.max(box.left, r.left + (l ?? -Infinity));
      }
      if (box.left > -Infinity || box.top > -Infinity || box.right < Infinity || box.bottom < Infinity) boxes.push(box);
      position = s.position;
    }
    return boxes;
  };
  const masked = (el) => {
    for (let a = el; a; a = a.parentElement) {
      const s = cs(a);
      if (s.clipPath !== "none" || (s.maskImage && s.maskImage !== "none") || (s.webkitMaskImage && s.webkitMaskImage !== "none")) return true;
    }
    return false;
  };
  const html = document.documentElement, body = document.body;
  const noScroll = (axis) => [html, body].some((e) => e && ["hidden", "clip"].includes(cs(e)[axis]));
  const [lockedX, lockedY] = [noScroll("overflowX"), noScroll("overflowY")];
  const W = innerWidth, H = innerHeight;
  const hitAt = (el, r) => {
    // a clip-path or a mask: ask the hit test whether the box's middle is painted
    const x = (r.left + r.right) / 2 + scrollX, y = (r.top + r.bottom) / 2 + scrollY;
    window.scrollTo(Math.max(0, x - W / 2), Math.max(0, y - H / 2));
    const seen = document.elementsFromPoint(x - scrollX, y - scrollY).includes(el);
    window.scrollTo(0, 0);
    return seen;
  };

  // why the boxes of a run (a text range's rectangles, or an image's box) are not seen, or null
  const unseen = (el, rects, colourOf) => {
    const why = hiddenBy(el);
    if (why) return why;
    if (opacity(el) < 0.1) return "opacity:0";
    rects = [...rects].filter((r) => r.width > 0 && r.height > 0);
    if (!rects.length) return parseFloat(cs(el).fontSize) === 0 ? "font-size:0" : "zero-size";
    if (rects.every((r) => r.height < MIN_PX)) return "tiny";
    const onPage = rects.filter((r) => r.right + scrollX > 0 && r.bottom + scrollY > 0 && !(lockedX && r.left + scrollX >= W) && !(lockedY && r.top + scrollY >= Math.max(H, html.scrollHeight)));
    if (!onPage.length) return "off-screen";
    const clips = clipsOf(el);
    const shown = onPage.filter((r) => {
      let [l, t, rt, b] = [r.left, r.top, r.right, r.bottom];
      for (const c of clips) [l, t, rt, b] = [Math.max(l, c.left), Math.max(t, c.top), Math.min(rt, c.right), Math.min(b, c.bottom)];
      return rt - l >= 1 && b - t >= MIN_PX;
    });
    if (!shown.length) return "clipped";
    if (masked(el) && !shown.some((r) => hitAt(el, r))) return "clipped";
    if (colourOf) {
      const s = cs(el);
      const fg = rgba(s.webkitTextFillColor || s.color);
      if (fg[3] * opacity(el) < 0.1) return "transparent colour";
      const bg = s.textShadow === "none" ? background(el) : null;
      if (bg && contrast(fg, bg) < MIN_CONTRAST) {
        // confirm with what is painted behind the text (a positioned box may lie under it)
        const r = shown[0];
        const x = (r.left + r.right) / 2 + scrollX, y = (r.top + r.bottom) / 2 + scrollY;
        window.scrollTo(Math.max(0, x - W / 2), Math.max(0, y - H / 2));
        const under = document.elementsFromPoint(x - scrollX, y - scrollY);
        window.scrollTo(0, 0);
        let behind = [255, 255, 255, 1];
        for (const u of under.slice(under.indexOf(el) + 1 || 0)) {
          const us = cs(u);
          if (us.backgroundImage !== "none") { behind = null; break; }
          const c = rgba(us.backgroundColor);
          if (c[3] >= 0.5) { behind = c; break; }
        }
        if (!behind || contrast(fg, behind) < MIN_CONTRAST) return "same colour as background";
      }
    }
    return null;
  };

  const out = { text: [], alt: [] };
  if (!body) return out;
  const walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || !node.data.trim() || ["SCRIPT", "STYLE", "TEXTAREA", "TITLE"].includes(el.tagName)) continue;
    range.selectNodeContents(node);
    const why = unseen(el, range.getClientRects(), true);
    if (why) {
      let before = node.previousSibling;
      while (before && before.nodeType !== Node.ELEMENT_NODE) before = before.previousSibling;
      out.text.push([id(el), before ? id(before) : -1, why]);
    }
  }
  for (const img of body.querySelectorAll("img[alt], area[alt], input[type=image][alt]")) {
    if (!img.getAttribute("alt").trim()) continue;
    const why = unseen(img, img.getClientRects(), false);
    if (why) out.alt.push([id(img), why]);
  }
  return out;
})()
