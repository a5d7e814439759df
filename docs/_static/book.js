// The book's own script (docs/conf.py: html_js_files).  Figures open full size on click: every image
// in a page's content that is not already a link becomes a link to its own file (a 12-panel figure
// shrunk to the column can then be read at its real size).  Nothing here loads anything.
document.addEventListener("DOMContentLoaded", () => {
  for (const img of document.querySelectorAll("article.bd-article img")) {
    if (img.closest("a")) continue;
    const link = document.createElement("a");
    link.href = img.currentSrc || img.src;
    link.className = "book-zoom";
    link.title = "Open the figure full size";
    img.replaceWith(link);
    link.appendChild(img);
  }
});
