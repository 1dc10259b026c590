// Sortable tables of the class report (allowed by the page's CSP by this file's sha256).
// A header cell with data-col="N" sorts the rows of every tbody of its table by their N-th cell:
// by the cell's data-v (a number) when it has one, else by its text. A second click reverses.
(function () {
  "use strict";
  function key(row, col) {
    var cell = row.children[col];
    if (!cell) { return ""; }
    var v = cell.getAttribute("data-v");
    return v === null ? cell.textContent.trim().toLowerCase() : parseFloat(v);
  }
  function sort(table, th) {
    var col = parseInt(th.getAttribute("data-col"), 10);
    var up = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(table.querySelectorAll("th[data-col]"), function (other) {
      other.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", up ? "ascending" : "descending");
    Array.prototype.forEach.call(table.tBodies, function (body) {
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a, col), y = key(b, col);
        var c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
        return up ? c : -c;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable th[data-col]"), function (th) {
      var table = th.closest("table");
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.title = "sort by this column";
      while (th.firstChild) { button.appendChild(th.firstChild); }
      th.appendChild(button);
      button.addEventListener("click", function () { sort(table, th); });
    });
  });
})();
