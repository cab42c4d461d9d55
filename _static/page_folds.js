// The result pages' folds (glauber_mlm.book.page_fold) and their interactive figures (glauber_mlm.book.plotly_pages).
// A Plotly figure's drawing script is an inert <script type="text/x-plotly-deferred"> naming its file and plotly.js:
// a figure on the page and outside any closed fold is drawn when the page loads, a folded one when its fold opens,
// so a page whose figures are all folded loads neither plotly.js (4.8 MB) nor their data. A figure drawn while its
// fold was closed had no width: when a fold opens, a resize event makes every responsive figure redraw at its width.
(function () {
  const DEFERRED = 'script[type="text/x-plotly-deferred"]';
  let plotly = null;

  function load(src) {
    return new Promise((done, failed) => {
      const script = document.createElement("script");
      script.src = src;
      script.onload = done;
      script.onerror = () => failed(new Error("could not load " + src));
      document.head.appendChild(script);
    });
  }

  function folded(element) {
    for (let fold = element.closest("details"); fold; fold = fold.parentElement && fold.parentElement.closest("details")) {
      if (!fold.open) return true;
    }
    return false;
  }

  async function draw(root) {
    const waiting = [...root.querySelectorAll(DEFERRED)].filter((script) => !folded(script));
    if (!waiting.length) return;
    waiting.forEach((script) => { script.type = "text/x-plotly-drawing"; });
    if (!window.Plotly) {
      plotly = plotly || load(waiting[0].dataset.plotly);
      await plotly;
    }
    for (const script of waiting) await load(script.dataset.src);
    window.dispatchEvent(new Event("resize"));
  }

  document.addEventListener("DOMContentLoaded", () => draw(document));
  document.addEventListener("toggle", (event) => {
    if (!event.target.open) return;
    draw(event.target);
    if (event.target.querySelector(".plotly-graph-div")) window.dispatchEvent(new Event("resize"));
  }, true);
})();
