/* book.js: small repairs to the theme's behaviour, on every page (Jupyter Book adds every
 * _static/*.js to every page; tests/test_built_book.py checks them in the built book).
 *
 * Collapsed hints and solutions (sphinx-togglebutton). Their whole title is meant to toggle
 * them, but togglebutton.js looks for the button from the element clicked, and knows only the
 * title itself, the button and its icon: a click on the title's link ("Exercise 1.1 (...)",
 * which sphinx-exercise puts in every solution's title) or on any other element inside the title
 * finds no button, throws "button is not defined" (or reuses the button of the last toggle
 * clicked, closing an open hint instead), and follows the link up to the exercise. Here every
 * click inside a toggle's title, caught before togglebutton's own handler, toggles that toggle
 * and nothing else; the link stays a link for a middle click or a modified click (new tab).
 */
(function () {
  "use strict";
  document.addEventListener("click", function (ev) {
    if (ev.button !== 0 || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.altKey) return;
    var target = ev.target && ev.target.nodeType === 1 ? ev.target : ev.target && ev.target.parentElement;
    var title = target && target.closest(".admonition.toggle > .admonition-title");
    if (!title) return;
    var button = title.querySelector(".toggle-button");
    if (!button || typeof window.toggleHidden !== "function") return; // leave it to the theme
    ev.preventDefault();
    ev.stopPropagation();
    window.toggleHidden(button);
  }, true);
})();

/* Accessibility repairs to the theme's and extensions' markup (WCAG 2.1 AA; make check-book runs
 * axe-core on every page, light and dark: tests/test_accessibility.py, where the issues still
 * open upstream are listed with their links; _templates/ repairs the theme's search field and
 * colour-mode button). Each repair here only changes attributes:
 *   - hidden code cells (myst-nb) were all named "Toggle hidden content" whatever their visible
 *     title ("Setup: imports; ..."): the title is their name;
 *   - every hint and solution button (sphinx-togglebutton) was named "Toggle hidden content" as
 *     well: each is named after its box's title ("Hint", "Solution to Exercise 4.2 ...");
 *   - the bibliography's entries (docutils) use the deprecated role doc-biblioentry inside a
 *     role="list", which then has no list items: they are list items.
 */
(function () {
  "use strict";
  function each(selector, f) { Array.prototype.forEach.call(document.querySelectorAll(selector), f); }
  function repair() {
    each("details > summary[aria-label='Toggle hidden content']", function (s) { s.removeAttribute("aria-label"); });
    each(".admonition.toggle > .admonition-title > .toggle-button", function (b) {
      var title = b.parentElement.textContent.replace(/\s+/g, " ").trim();
      if (title) b.setAttribute("aria-label", title);
    });
    each("[role='doc-biblioentry']", function (e) { e.setAttribute("role", "listitem"); });
  }
  if (document.readyState === "complete") repair();
  else window.addEventListener("load", repair);
})();

/* The cross-attention explorers (minformer.explorer: chapter 13's stored outputs and the page
 * translator's) write each source token's weight into an aria-label on a plain <span>, which
 * screen readers skip. When a target token is focused or picked (keyboard, tap, click), a polite
 * live region here says whom it attends to: the largest weights first, every weight of 0.05 or
 * more, from what the explorer has just shown (tests/test_accessibility.py).
 */
(function () {
  "use strict";
  function words(root) {
    return Array.prototype.map.call(root.querySelectorAll("[data-role=src] .mfx-tok"), function (e) {
      var m = /^(.*), weight ([\d.]+)$/.exec(e.getAttribute("aria-label") || "");
      return m ? {token: m[1], weight: Number(m[2])} : null;
    }).filter(Boolean);
  }
  function enhance(root) {
    if (root.dataset.mfxSpoken) return;
    root.dataset.mfxSpoken = "1";
    var region = document.createElement("div");
    region.setAttribute("role", "status");
    region.setAttribute("aria-live", "polite");
    region.setAttribute("data-mfx-live", "");
    region.style.cssText = "position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;" +
      "clip:rect(0 0 0 0);white-space:nowrap;border:0";
    root.appendChild(region);
    var timer = null;
    function speak(ev) {
      var n = ev.target && ev.target.closest && ev.target.closest("[data-t]");
      if (!n || !root.contains(n)) return;
      if (ev.type === "keydown" && ev.key !== "Enter" && ev.key !== " ") return;
      clearTimeout(timer);
      timer = setTimeout(function () { // after the explorer's own handler has painted the weights
        var t = +n.getAttribute("data-t");
        var target = root.querySelectorAll("[data-role=tgt] .mfx-tok")[t];
        var ws = words(root).sort(function (a, b) { return b.weight - a.weight; });
        if (!target || !ws.length) return;
        var big = ws.filter(function (w, i) { return i === 0 || w.weight >= 0.05; });
        region.textContent = "\u201c" + target.firstChild.textContent + "\u201d attends to " +
          big.map(function (w) { return w.token.trim() + " " + w.weight.toFixed(2); }).join(", ") +
          (big.length < ws.length ? "; the other " + (ws.length - big.length) + " tokens less than 0.05" : "") + ".";
      }, 50);
    }
    ["focusin", "click", "keydown"].forEach(function (type) { root.addEventListener(type, speak); });
  }
  function all() { Array.prototype.forEach.call(document.querySelectorAll("div.mfx"), enhance); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", all);
  else all();
  window.addEventListener("load", all);
})();
