/*
 * Click to zoom: a figure shown at its full resolution in an overlay.
 *
 * Figures are the <img> of a <figure class="tr-figure"> (tracesite.html.FigureHTML:
 * a PNG at twice the pixel density of its laid-out size) and sphinx-gallery's
 * images (their srcset's largest candidate). Each becomes focusable (a focus ring
 * in zoom.css), gets role=button and an aria-label, and opens on a click, Enter or
 * Space. The overlay shows the picture at its natural size (1 image pixel per CSS
 * pixel: twice its size on the page), scrolling when larger than the window; Escape,
 * a click anywhere or the close button closes it, and focus returns to the figure.
 *
 * Bound on DOMContentLoaded, no inline script; without JavaScript a figure is a
 * plain image.
 */
(function () {
  "use strict";

  var SELECTOR = "figure.tr-figure img, img.sphx-glr-single-img, img.sphx-glr-multi-img";
  var overlay = null;
  var opener = null;

  // The highest-density candidate of an <img srcset>, else the image's own source.
  function bestSource(img) {
    var best = img.currentSrc || img.src;
    var bestX = 0;
    (img.getAttribute("srcset") || "").split(",").forEach(function (item) {
      var parts = item.trim().split(/\s+/);
      if (!parts[0]) return;
      var x = parts[1] && /x$/.test(parts[1]) ? parseFloat(parts[1]) : 1;
      if (x > bestX) {
        bestX = x;
        best = new URL(parts[0], document.baseURI).href;
      }
    });
    return best;
  }

  function close() {
    if (!overlay) return;
    overlay.remove();
    overlay = null;
    document.documentElement.classList.remove("tr-zoom-open");
    document.removeEventListener("keydown", onKey, true);
    if (opener) opener.focus();
    opener = null;
  }

  function onKey(event) {
    if (!overlay) return;
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      close();
    } else if (event.key === "Tab") {
      event.preventDefault(); // the close button is the overlay's only control
      overlay.querySelector(".tr-zoom-close").focus();
    }
  }

  function open(img) {
    close();
    opener = img;
    overlay = document.createElement("div");
    overlay.className = "tr-zoom";
    overlay.setAttribute("role", "dialog");
    overlay.setAttribute("aria-modal", "true");
    overlay.setAttribute("aria-label", "Enlarged figure; Escape or a click closes it");

    var button = document.createElement("button");
    button.type = "button";
    button.className = "tr-zoom-close";
    button.setAttribute("aria-label", "Close the enlarged figure");
    button.textContent = "\u00d7";

    var big = document.createElement("img");
    big.className = "tr-zoom-img";
    big.alt = img.getAttribute("alt") || "";
    big.decoding = "async";
    big.addEventListener("load", function () {
      big.style.width = big.naturalWidth + "px"; // natural size, not the page's
    });
    big.src = bestSource(img);

    overlay.appendChild(button);
    overlay.appendChild(big);
    overlay.addEventListener("click", close); // anywhere, the picture included
    document.addEventListener("keydown", onKey, true);
    document.documentElement.classList.add("tr-zoom-open");
    document.body.appendChild(overlay);
    button.focus();
  }

  function bind(img) {
    if (img.classList.contains("tr-zoomable")) return;
    img.classList.add("tr-zoomable");
    img.tabIndex = 0;
    img.setAttribute("role", "button");
    img.setAttribute("aria-haspopup", "dialog");
    var alt = (img.getAttribute("alt") || "").trim();
    img.setAttribute("aria-label", "Enlarge figure" + (alt ? ": " + alt : ""));
    img.title = "Click to enlarge";
    img.addEventListener("click", function () {
      open(img);
    });
    img.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        open(img);
      }
    });
  }

  function init() {
    document.querySelectorAll(SELECTOR).forEach(bind);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
