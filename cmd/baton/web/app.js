// Refreshes the summary, the page of names and the detail without reloading
// the page: fetches the server-rendered fragment for the current query every
// data-refresh milliseconds and swaps it in when it changed.
(function () {
  "use strict";
  const every = Number(document.body.dataset.refresh) || 1000;
  const jobs = document.getElementById("jobs");
  const live = document.getElementById("live");
  let last = "";
  // A swap between a button's press and its release would take the link
  // from under the mouse, and the click would be lost: while a button is
  // down over the names, the refresh waits for the next tick.
  let pressed = false;
  jobs.addEventListener("pointerdown", () => { pressed = true; });
  document.addEventListener("pointerup", () => { setTimeout(() => { pressed = false; }, 0); });
  document.addEventListener("pointercancel", () => { pressed = false; });
  async function tick() {
    if (pressed) {
      setTimeout(tick, every);
      return;
    }
    try {
      // The same page, filters and selection as the address bar says:
      // one page of names and one name's detail, never every name.
      const resp = await fetch("/fragment" + location.search, { cache: "no-store" });
      if (!resp.ok) throw new Error("HTTP " + resp.status);
      const html = await resp.text();
      // Keep open <details> open across refreshes.
      const open = new Set([...jobs.querySelectorAll("section.job details[open]")]
        .map(d => d.closest("section.job").dataset.name));
      const body = html.replace(/<div class="stamp"[^>]*>[^<]*<\/div>/, "");
      if (pressed) {
        // pressed while the fragment was on its way: next tick
      } else if (body !== last) {
        jobs.innerHTML = html;
        last = body;
        for (const s of jobs.querySelectorAll("section.job")) {
          if (open.has(s.dataset.name)) s.querySelector("details").open = true;
        }
      } else {
        const stamp = jobs.querySelector(".stamp");
        const fresh = html.match(/data-now="([^"]*)"/);
        if (stamp && fresh) stamp.textContent = "as of " + fresh[1];
      }
      live.textContent = "live, refreshing every " + every + " ms";
      live.classList.remove("stale");
    } catch (e) {
      live.textContent = "cannot reach baton serve (" + e.message + "); retrying";
      live.classList.add("stale");
    }
    setTimeout(tick, every);
  }
  setTimeout(tick, every);
})();
