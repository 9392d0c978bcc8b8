// mcpward console: draws the guard activity chart as SVG (no dependencies, no inline code).
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const KINDS = ["deny", "hold", "redact"];

  function el(name, attrs, text) {
    const node = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function chartFor(series, days) {
    const width = 720, height = 160, left = 30, bottom = 20;
    const svg = el("svg", { viewBox: `0 0 ${width} ${height}`, width: "100%", role: "img" });
    let peak = 1;
    days.forEach((_, i) => {
      peak = Math.max(peak, KINDS.reduce((sum, k) => sum + series[k][i], 0));
    });
    const slot = (width - left) / days.length;
    const scale = (height - bottom - 10) / peak;
    svg.appendChild(el("text", { x: 0, y: 12 }, String(peak)));
    days.forEach((day, i) => {
      let y = height - bottom;
      for (const kind of KINDS) {
        const value = series[kind][i];
        if (!value) continue;
        const h = value * scale;
        y -= h;
        const bar = el("rect", { x: left + i * slot + 2, y, width: slot - 4, height: h, class: kind });
        bar.appendChild(el("title", {}, `${day}: ${value} ${kind}`));
        svg.appendChild(bar);
      }
      if ((days.length - 1 - i) % 2 === 0) svg.appendChild(el("text", { x: left + i * slot, y: height - 5 }, day.slice(5)));
    });
    return svg;
  }

  function legend() {
    const p = document.createElement("p");
    p.className = "chart-legend";
    for (const kind of KINDS) {
      const span = document.createElement("span");
      span.className = kind;
      span.textContent = kind === "deny" ? "denials" : kind === "hold" ? "holds" : "redactions";
      p.appendChild(span);
    }
    return p;
  }

  async function drawGuardChart(container) {
    const response = await fetch(container.dataset.source, { credentials: "same-origin" });
    container.textContent = "";
    if (!response.ok) {
      container.textContent = `Could not load the data (${response.status}).`;
      return;
    }
    const data = await response.json();
    if (!data.series.length) {
      container.textContent = "No denials, holds or redactions in this period.";
      return;
    }
    container.appendChild(legend());
    for (const series of data.series) {
      const section = document.createElement("section");
      section.className = "guard";
      const title = document.createElement("h2");
      title.textContent = series.guard;
      section.appendChild(title);
      section.appendChild(chartFor(series, data.days));
      container.appendChild(section);
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const chart = document.getElementById("guard-chart");
    if (chart) drawGuardChart(chart);
  });
})();
