// Refreshes the summary, the page of names and the detail without reloading
// the page: fetches the server-rendered fragment for the current query every
// data-refresh milliseconds and swaps it in when it changed.
(function () {
  "use strict";
  const every = Number(document.body.dataset.refresh) || 1000;
  const jobs = document.getElementById("jobs");
  const live = document.getElementById("live");
  let last = "";
  async function tick() {
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
      if (body !== last) {
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
