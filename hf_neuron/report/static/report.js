// hf-neuron compatibility report: sorting and filtering of the architecture table.
// Plain JavaScript, no library; without JavaScript the full table is shown in ranking order.
(function () {
  "use strict";
  var table = document.getElementById("matrix");
  var form = document.getElementById("filters");
  if (!table || !form) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var headerRows = table.tHead.rows;
  var headers = Array.prototype.slice.call(headerRows[headerRows.length - 1].cells);
  var count = document.getElementById("row-count");

  function value(row, column, type) {
    var cell = row.cells[column];
    if (type === "num") { return Number(cell.getAttribute("data-value") || cell.textContent); }
    return cell.textContent.trim().toLowerCase();
  }

  function sortBy(column) {
    var header = headers[column];
    var type = header.getAttribute("data-type");
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    headers.forEach(function (h) { h.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var keyed = rows.map(function (row, index) { return [value(row, column, type), index, row]; });
    keyed.sort(function (a, b) {
      var order = a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
      return (ascending ? order : -order) || a[1] - b[1];
    });
    keyed.forEach(function (item) { body.appendChild(item[2]); });
  }

  headers.forEach(function (header, column) {
    if (!header.hasAttribute("data-type")) { return; }
    var button = document.createElement("button");
    button.type = "button";
    while (header.firstChild) { button.appendChild(header.firstChild); }
    header.appendChild(button);
    button.addEventListener("click", function () { sortBy(column); });
  });

  function control(id) { return document.getElementById(id); }
  function optional(id) { var select = control(id); return select ? select.value : ""; }

  function matches(row) {
    var text = control("filter-text").value.trim().toLowerCase();
    var group = optional("filter-group");
    var outcome = control("filter-outcome").value;
    var changed = control("filter-changed");
    var top = control("filter-top");
    var name = row.getAttribute("data-name").toLowerCase();
    var statuses = row.getAttribute("data-statuses").split(" ");
    var unmodified = row.getAttribute("data-unmodified") === "1";
    if (text && name.indexOf(text) < 0) { return false; }
    if (group && row.getAttribute("data-group") !== group) { return false; }
    if (outcome === "unmodified") {
      if (!unmodified) { return false; }
    } else if (outcome === "not-unmodified") {
      if (unmodified) { return false; }
    } else if (outcome && statuses.indexOf(outcome) < 0) {
      return false;
    }
    if (changed && changed.checked && row.getAttribute("data-changed") !== "1") { return false; }
    if (top && top.checked && row.getAttribute("data-top") !== "1") { return false; }
    return true;
  }

  function filter() {
    var shown = 0;
    rows.forEach(function (row) {
      row.hidden = !matches(row);
      if (!row.hidden) { shown += 1; }
    });
    count.textContent = "Showing " + shown + " of " + rows.length + " architectures";
  }

  form.addEventListener("input", filter);
  form.addEventListener("change", filter);
  form.addEventListener("submit", function (event) { event.preventDefault(); });
  form.hidden = false;
  filter();
})();
