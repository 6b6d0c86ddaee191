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
