// Refreshes the jobs without reloading the page: fetches the server-rendered
// fragment every data-refresh milliseconds and swaps it in when it changed.
(function () {
  "use strict";
  const every = Number(document.body.dataset.refresh) || 1000;
  const jobs = document.getElementById("jobs");
  const live = document.getElementById("live");
  let last = "";
  async function tick() {
    try {
      const resp = await fetch("/fragment", { cache: "no-store" });
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
