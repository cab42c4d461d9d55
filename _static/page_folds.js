// The result pages' folds (glauber_mlm.book.page_fold): a Plotly figure drawn while its fold was closed had no
// width; when a fold opens, a resize event makes every responsive Plotly figure redraw at its container's width.
document.addEventListener("toggle", (event) => {
  if (event.target.open && event.target.querySelector(".plotly-graph-div")) {
    window.dispatchEvent(new Event("resize"));
  }
}, true);
