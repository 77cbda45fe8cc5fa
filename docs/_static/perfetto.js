/*
 * "Open in Perfetto" buttons: hand a trace from this site to ui.perfetto.dev.
 *
 * Markup (written by tracereader._html.trace_links_html):
 *   <button class="tr-perfetto" data-trace="URL" data-title="TITLE" hidden>
 *
 * On click: open a blank tab (synchronously, inside the click, or pop-up
 * blockers refuse it), fetch the trace from this site, then send the tab to
 * https://ui.perfetto.dev, send "PING" to it until it answers "PONG", and
 * post {perfetto: {buffer, title, fileName}}. If the fetch fails, the blank
 * tab is closed: it never started a navigation, so nothing can keep it open
 * (Chromium drops a close that lands while a tab navigates to another site,
 * and the tab then stays open). This is the handshake Perfetto
 * documents in "Deep linking to the Perfetto UI"; the PINGs are needed
 * because messages sent before the UI has registered its listener are lost.
 * Perfetto reads gzipped JSON buffers, so the .json.gz goes as it is.
 *
 * Nothing is fetched before a click. Buttons start hidden and are revealed
 * here, so readers without JavaScript see only the download link.
 */
(function () {
  "use strict";

  var ORIGIN = "https://ui.perfetto.dev";
  var PING_MS = 100;
  var GIVE_UP_MS = 60000;

  function fileNameOf(url) {
    var path = url.split(/[?#]/)[0];
    return decodeURIComponent(path.substring(path.lastIndexOf("/") + 1)) || "trace.json.gz";
  }

  function statusFor(button) {
    var box = button.parentNode && button.parentNode.querySelector(".tr-perfetto-status");
    return function (text) {
      if (box) box.textContent = text ? " " + text : "";
    };
  }

  function openInPerfetto(button) {
    var url = button.getAttribute("data-trace");
    var fileName = fileNameOf(url);
    var title = button.getAttribute("data-title") || fileName;
    var say = statusFor(button);

    if (window.location.protocol === "file:") {
      say("Serve the site over http to open traces in Perfetto, or download the trace " +
          "and drop it on ui.perfetto.dev.");
      return;
    }
    var win = window.open("");
    if (!win) {
      say("The Perfetto tab was blocked: allow pop-ups for this site, or download the trace.");
      return;
    }
    try {
      win.document.title = "Loading " + fileName + "…";
    } catch (ignored) {
      /* a browser that did not give us a same-origin blank tab: nothing to name */
    }

    var buffer = null;
    var ready = false;
    var finished = false;
    var pinger = window.setInterval(function () {
      if (win.closed) {
        finish("The Perfetto tab was closed.");
        return;
      }
      win.postMessage("PING", ORIGIN);
    }, PING_MS);
    var giveUp = window.setTimeout(function () {
      finish("Perfetto did not answer; download the trace and open it there.");
    }, GIVE_UP_MS);

    function onMessage(event) {
      if (event.source !== win || event.origin !== ORIGIN || event.data !== "PONG") return;
      ready = true;
      send();
    }

    function finish(message) {
      if (finished) return;
      finished = true;
      window.clearInterval(pinger);
      window.clearTimeout(giveUp);
      window.removeEventListener("message", onMessage);
      button.disabled = false;
      say(message);
    }

    function send() {
      if (finished || !ready || buffer === null) return;
      win.postMessage(
        { perfetto: { buffer: buffer, title: title, fileName: fileName } },
        ORIGIN
      );
      finish("Opened in the Perfetto tab.");
    }

    window.addEventListener("message", onMessage);
    button.disabled = true;
    say("Loading " + fileName + "…");
    fetch(url)
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.arrayBuffer();
      })
      .then(function (data) {
        if (finished) return;
        buffer = data;
        say("Waiting for Perfetto…");
        win.location.href = ORIGIN;
      })
      .catch(function (error) {
        finish("Could not load " + fileName + " (" + error.message + ").");
        try {
          win.close();
        } catch (ignored) {
          /* the tab may already be gone */
        }
      });
  }

  function bind() {
    var buttons = document.querySelectorAll("button.tr-perfetto[data-trace]");
    Array.prototype.forEach.call(buttons, function (button) {
      if (button.getAttribute("data-tr-bound")) return;
      button.setAttribute("data-tr-bound", "1");
      button.addEventListener("click", function () {
        openInPerfetto(button);
      });
      button.hidden = false;
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", bind);
  } else {
    bind();
  }
})();
