/* apsearch report: draws the eight charts of shared/design/OUTPUTS.md from
 * the data block #apsearch-data (written by lua/apsearch/report/html.lua)
 * with Apache ECharts, inlined above this script.  Every number here was
 * computed by the apsearch core; this script only converts units for
 * display (bytes -> GiB = 2^30 bytes).
 *
 * When rendering is done the <html> element carries
 *   data-charts-ok       charts drawn with data (8, or 9 with the pipeline
 *                        Gantt chart, when all have data)
 *   data-gantt           chart 9: "ops=N ranks=P windows=W" drawn (absent
 *                        without a pipelined strategy)
 *   data-charts-rendered charts that finished rendering
 *   data-charts-empty    ids of charts without data (space separated)
 *   data-script-errors   script errors seen (0 expected)
 *   data-charts-finished ids of the charts done so far (for diagnosis)
 *   data-category-colors the colour each category was drawn in, as
 *                        "name=#rrggbb" separated by spaces (charts 1-3)
 *   data-color-mismatch  categories drawn in a colour not in the map (or
 *                        in two colours); empty when all agree
 *   data-topk-overflow   pixels the top-k table is wider than its box
 *                        (0: no horizontal scrolling)
 *   data-overflowing-tables ids of the top-k, baseline and closest-strategy
 *                        tables that need horizontal scrolling (none: empty)
 * which the headless-browser test (tests/browser/) reads.  With
 * "?selftest" in the URL the page also clicks the top-k table's headers
 * and sets data-sort-test to "ok" or to what went wrong, ticks chart
 * 7's log-scale box and sets data-log-test (both axes log, then back), and
 * sets data-gantt-label-overlaps to the pairs of chart 9's time-axis
 * labels drawn over each other (0 expected) and data-scatter-ranks-
 * unlabelled to the top-k ranks no label of chart 7 names (empty
 * expected).
 */
(function () {
  'use strict';
  var root = document.documentElement;
  var errors = 0;
  function noteError(msg) {
    errors += 1;
    root.setAttribute('data-script-errors', String(errors));
    var box = document.getElementById('script-errors');
    if (box) { box.hidden = false; box.textContent += msg + '\n'; }
  }
  root.setAttribute('data-script-errors', '0');
  window.addEventListener('error', function (ev) {
    noteError('error: ' + (ev.message || 'unknown') + (ev.lineno ? ' (line ' + ev.lineno + ')' : ''));
  });

  // the top-k table: a click on a header sorts by that column (numbers
  // as numbers), a second click reverses; works without ECharts
  function cellKey(td) {
    var t = (td.textContent || '').trim();
    var m = /^[-+]?\d+(\.\d+)?/.exec(t);
    return m ? { n: parseFloat(m[0]), t: t } : { n: null, t: t };
  }
  function sortTable(table, col, dir) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellKey(a.cells[col]), y = cellKey(b.cells[col]), r;
      if (x.n !== null && y.n !== null) r = x.n - y.n;
      else if (x.n !== null) r = -1;
      else if (y.n !== null) r = 1;
      else r = x.t.localeCompare(y.t);
      if (r === 0) r = Number(a.getAttribute('data-order')) - Number(b.getAttribute('data-order'));
      else r = dir * r;
      return r;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, j) {
      th.setAttribute('aria-sort', j === col ? (dir > 0 ? 'ascending' : 'descending') : 'none');
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (table) {
    if (!table.tHead || !table.tBodies[0]) return;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (r, i) { r.setAttribute('data-order', String(i)); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, j) {
      th.setAttribute('aria-sort', 'none');
      th.title = 'sort by ' + th.textContent + ' (click again to reverse)';
      th.addEventListener('click', function () {
        var dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1;
        sortTable(table, j, dir);
      });
    });
  });
  function measureTopk() {
    var t = document.getElementById('topk-table');
    if (t) root.setAttribute('data-topk-overflow', String(Math.max(0, t.parentNode.scrollWidth - t.parentNode.clientWidth)));
    var wide = [];
    ['topk-table', 'baseline-table', 'closest-table'].forEach(function (id) {
      var x = document.getElementById(id);
      if (x && x.parentNode.scrollWidth > x.parentNode.clientWidth) wide.push(id);
    });
    root.setAttribute('data-overflowing-tables', wide.join(' '));
  }
  measureTopk();
  window.addEventListener('resize', measureTopk);
  function sortSelftest(objective) {
    var t = document.getElementById('topk-table');
    if (!t) return 'no top-k table';
    var heads = Array.prototype.slice.call(t.tHead.rows[0].cells);
    function col(name) { for (var j = 0; j < heads.length; j++) if (heads[j].textContent.indexOf(name) === 0) return j; return -1; }
    function values(j) { return Array.prototype.map.call(t.tBodies[0].rows, function (r) { return cellKey(r.cells[j]).n; }); }
    function sorted(v, dir) { for (var i = 1; i < v.length; i++) if (dir * (v[i] - v[i - 1]) < 0) return false; return true; }
    var st = col('step time'), rk = col('rank'), mem = col('peak');
    if (st < 0 || rk < 0 || mem < 0) return 'columns not found';
    heads[mem].click();
    if (!sorted(values(mem), 1) || heads[mem].getAttribute('aria-sort') !== 'ascending') return 'peak not ascending after one click';
    heads[mem].click();
    if (!sorted(values(mem), -1) || heads[mem].getAttribute('aria-sort') !== 'descending') return 'peak not descending after two clicks';
    if (t.tBodies[0].rows.length > 1 && values(rk)[0] === 1 && sorted(values(rk), 1)) return 'rank order unchanged by sorting on peak';
    heads[rk].click();
    if (!sorted(values(rk), 1)) return 'rank not ascending';
    if (objective === 'step_time' && !sorted(values(st), 1)) return 'step time not ascending in rank order (objective step_time)';
    return 'ok';
  }
  var D;
  try {
    D = JSON.parse(document.getElementById('apsearch-data').textContent);
  } catch (e) {
    noteError('cannot read the report data: ' + e);
    return;
  }
  if (/selftest/.test(location.search)) {
    try { root.setAttribute('data-sort-test', sortSelftest(D.objective)); } catch (e) { root.setAttribute('data-sort-test', 'error: ' + e); }
  }
  if (typeof echarts === 'undefined') {
    root.setAttribute('data-echarts', 'missing');
    root.setAttribute('data-charts-ok', '0');
    return;
  }
  root.setAttribute('data-echarts', echarts.version || 'present');

  var GiB = 1073741824;
  function gib(b) { return (b || 0) / GiB; }
  function f(x, d) { return (x === null || x === undefined) ? '-' : Number(x).toFixed(d); }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c];
    });
  }
  var topk = D.topk || [];
  var byRank = {};
  topk.forEach(function (t) { byRank[t.rank] = t; });
  function rankLabel(r) { return '#' + r; }
  function strategyBlock(text) {
    return '<div class="tt-strategy">' + esc(text || '') + '</div>';
  }
  var animation = { animationDuration: 300, animationDurationUpdate: 200 };
  // a round axis maximum above both the data and the memory limit
  function memMax(v) {
    var top = Math.max(v.max, gib(memLimit || 0)) * 1.04;
    var step = top > 200 ? 50 : (top > 40 ? 10 : 5);
    return Math.ceil(top / step) * step;
  }

  var expected = 0, finished = {}, withData = {}, emptyIds = [], charts = [];
  function done() {
    var n = 0, ok = 0;
    Object.keys(finished).forEach(function (k) { if (finished[k]) n += 1; });
    root.setAttribute('data-charts-finished', Object.keys(finished).sort().join(' '));
    if (n < expected) return;
    Object.keys(withData).forEach(function (k) { if (withData[k]) ok += 1; });
    root.setAttribute('data-charts-rendered', String(n));
    root.setAttribute('data-charts-empty', emptyIds.join(' '));
    root.setAttribute('data-charts-ok', String(ok));
  }
  function chart(id, hasData, build) {
    var el = document.getElementById(id);
    if (!el) { noteError('missing chart element ' + id); return null; }
    expected += 1;
    withData[id] = !!hasData;
    if (!hasData) {
      emptyIds.push(id);
      el.classList.add('empty');
      el.textContent = el.getAttribute('data-empty') || 'no data for this chart';
      finished[id] = true;
      done();
      return null;
    }
    var c;
    try {
      c = echarts.init(el, null, { renderer: 'canvas' });
      c.on('finished', function () {
        if (!finished[id]) { finished[id] = true; done(); }
      });
      c.setOption(build());
      charts.push(c);
    } catch (e) {
      noteError(id + ': ' + e);
      withData[id] = false;
      finished[id] = true;
      done();
    }
    return c;
  }
  window.addEventListener('resize', function () { charts.forEach(function (c) { c.resize(); }); });

  var cats = D.categories || { memory: [], time: [] };
  var memLimit = D.memory_limit_bytes;
  // what the limit bounds (the estimate's memory_limit_kind): the bars and
  // points plot device memory in use, which adds the CUDA context and the
  // NCCL buffers to max reserved, so a strategy within a limit on max
  // reserved can stand above its line; the line and tooltips say so
  var limitKind = D.memory_limit_kind || 'device';
  var limitName = limitKind === 'device' ? 'limit' : 'limit (max ' + limitKind + ')';
  // one colour per category, from the map in html.lua (M.category_colors);
  // what each chart drew is read back from ECharts and reported on <html>
  var COLORS = D.colors || {};
  var drawn = {}, mismatch = {};
  function color(c) { return COLORS[c] || '#888888'; }
  function noteColors(c) {
    var opt = c.getOption();
    (opt.series || []).forEach(function (sr, i) {
      var k = sr.name;
      if (sr.type !== 'bar' || !Object.prototype.hasOwnProperty.call(COLORS, k)) return;
      var got = typeof c.getVisual === 'function' ? c.getVisual({ seriesIndex: i }, 'color') : (sr.itemStyle || {}).color;
      got = String(got || '').toLowerCase();
      if (drawn[k] && drawn[k] !== got) mismatch[k] = true;
      drawn[k] = got;
      if (got !== String(COLORS[k]).toLowerCase()) mismatch[k] = true;
    });
    root.setAttribute('data-category-colors', Object.keys(drawn).sort().map(function (k) { return k + '=' + drawn[k]; }).join(' '));
    root.setAttribute('data-color-mismatch', Object.keys(mismatch).sort().join(' '));
  }
  // an axis maximum with room for the labels above the bars
  function roomy(v) {
    var m = v.max * 1.15, p = Math.pow(10, Math.floor(Math.log(m) / Math.LN10));
    return Math.ceil(m / p) * p;
  }
  // the total of a stacked bar above it, and its difference to rank 1 (so
  // that a 1 % difference reads even where the bars look equal)
  function totalLabel(get, digits, unit) {
    var base = topk.length ? get(topk[0]) : 0;
    return {
      show: true, position: 'top', fontSize: 10, color: '#1f2328', lineHeight: 12,
      backgroundColor: 'rgba(255,255,255,0.85)', padding: [1, 2],
      formatter: function (p) {
        var v = get(topk[p.dataIndex]);
        var s = f(v, digits);
        if (p.dataIndex > 0 && base) s += '\n' + (v >= base ? '+' : '') + f(100 * (v - base) / base, 1) + '%';
        return s;
      }
    };
  }

  // 1. step time of the top-k, stacked by performance category (exposed s)
  var c1 = chart('chart1', topk.length > 0, function () {
    var used = cats.time.filter(function (c) {
      return topk.some(function (t) { return (t.time[c] || 0) > 0; });
    });
    return Object.assign({
      title: { text: '1. Estimated step time of the top-' + topk.length, subtext: 'exposed (critical-path) seconds per category; above a bar: step time, vs rank 1' },
      tooltip: {
        trigger: 'axis', axisPointer: { type: 'shadow' }, confine: true,
        formatter: function (ps) {
          var t = topk[ps[0].dataIndex];
          var s = '<b>rank ' + t.rank + '</b>: step ' + f(t.step_time, 3) + ' s, ' + f(t.tokens_per_s_per_gpu, 0) +
            ' tokens/s/GPU, MFU ' + f(100 * t.mfu, 1) + '%' + strategyBlock(t.strategy_text);
          ps.forEach(function (p) { if (p.value > 0) s += p.marker + esc(p.seriesName) + ': ' + f(p.value, 3) + ' s<br>'; });
          return s;
        }
      },
      // every category visible: a plain legend wraps onto a second row
      legend: { bottom: 0 },
      grid: { left: 60, right: 56, top: 88, bottom: 84 },
      xAxis: { type: 'category', data: topk.map(function (t) { return rankLabel(t.rank); }), name: 'rank' },
      yAxis: { type: 'value', name: 'step time (s)', max: roomy,
        axisLabel: { formatter: function (v) { return +v.toFixed(3); } } },
      labelLayout: { hideOverlap: true },
      series: used.map(function (c, i) {
        var sr = { name: c, type: 'bar', stack: 'time', emphasis: { focus: 'series' },
          itemStyle: { color: color(c) },
          data: topk.map(function (t) { return t.time[c] || 0; }) };
        if (i === used.length - 1) sr.label = totalLabel(function (t) { return t.step_time; }, 3);
        return sr;
      })
    }, animation);
  });
  if (c1) noteColors(c1);

  // 2. per-GPU memory of the top-k, stacked by memory category, limit line
  var c2 = chart('chart2', topk.length > 0, function () {
    var used = cats.memory.filter(function (c) {
      return topk.some(function (t) { return (t.mem[c] || 0) > 0; });
    });
    var series = used.map(function (c, i) {
      var sr = { name: c, type: 'bar', stack: 'mem', emphasis: { focus: 'series' },
        itemStyle: { color: color(c) },
        data: topk.map(function (t) { return gib(t.mem[c]); }) };
      if (i === used.length - 1) sr.label = totalLabel(function (t) { return gib(t.mem_peak); }, 2);
      return sr;
    });
    if (series.length && memLimit) {
      // the limit line on a data-less series of its own, drawn under the
      // bars (z 1), so the bars' peak labels (white background) are drawn
      // over it instead of crossed by it; a line series takes no bar slot
      series.push({
        type: 'line', data: [], z: 1, silent: true,
        markLine: {
          z: 1, symbol: 'none', silent: true, lineStyle: { color: '#d62728', type: 'dashed', width: 2 },
          // right of the plot: above the bars it sat on their peak labels
          // (the plot's right margin holds about 8 characters a line)
          label: { formatter: (limitKind === 'device' ? 'limit' : limitKind + '\nlimit') + '\n' + f(gib(memLimit), 2),
            position: 'end', color: '#d62728', lineHeight: 14 },
          data: [{ yAxis: gib(memLimit) }]
        }
      });
    }
    return Object.assign({
      title: { text: '2. Peak memory per GPU of the top-' + topk.length, subtext: 'worst stage, GiB; above a bar: device peak, vs rank 1; dashed: ' +
        (limitKind === 'device' ? 'limit' : 'limit on max ' + limitKind) },
      tooltip: {
        trigger: 'axis', axisPointer: { type: 'shadow' }, confine: true,
        formatter: function (ps) {
          var t = topk[ps[0].dataIndex];
          var s = '<b>rank ' + t.rank + '</b>: peak ' + f(gib(t.mem_peak), 2) + ' GiB' +
            (limitKind === 'device' || t.mem_limited == null ? ' of ' + f(gib(memLimit), 2) + ' GiB'
              : ' (max ' + limitKind + ' ' + f(gib(t.mem_limited), 2) + ' GiB of its limit ' + f(gib(memLimit), 2) + ' GiB)') +
            ' (stage ' + t.worst_stage + ')' + strategyBlock(t.strategy_text);
          ps.forEach(function (p) { if (p.value > 0) s += p.marker + esc(p.seriesName) + ': ' + f(p.value, 2) + ' GiB<br>'; });
          return s;
        }
      },
      // every category visible: a plain legend wraps onto a second row;
      // the categories only (not the limit line's series)
      legend: { bottom: 0, data: used },
      grid: { left: 60, right: 56, top: 88, bottom: 84 },
      xAxis: { type: 'category', data: topk.map(function (t) { return rankLabel(t.rank); }), name: 'rank' },
      yAxis: { type: 'value', name: 'GiB', max: memMax },
      labelLayout: { hideOverlap: true },
      series: series
    }, animation);
  });
  if (c2) noteColors(c2);

  // 3. per-stage memory and time of one top-k strategy (a PP one if any)
  var stageSelect = document.getElementById('stage-rank');
  var defaultStageRank = D.stage_rank || (topk[0] && topk[0].rank);
  function stageOption(rank) {
    var t = byRank[rank];
    var stages = t.stages;
    var used = cats.memory.filter(function (c) {
      return stages.some(function (st) { return (st.mem[c] || 0) > 0; });
    });
    // the layers each rank really holds: with vpp > 1 its model chunks
    // are virtual stages i, i + p, i + 2p, ... (html.lua chunk_layers)
    // a rank's chunks spelt out only while they fit under a bar (every
    // chunk is in the tooltip): the first range and how many more
    var labels = stages.map(function (st) {
      var parts = String(st.layers).split(', ');
      var text = parts.length > 2 ? parts[0] + ' +' + (parts.length - 1) : st.layers;
      return 'stage ' + st.stage + '\n' + text;
    });
    var series = used.map(function (c) {
      return { name: c, type: 'bar', stack: 'mem', yAxisIndex: 0, itemStyle: { color: color(c) },
        data: stages.map(function (st) { return gib(st.mem[c]); }) };
    });
    series.push({ name: 'forward per micro-batch (s)', type: 'line', yAxisIndex: 1, symbolSize: 8,
      itemStyle: { color: color('compute_fwd') }, lineStyle: { color: color('compute_fwd') },
      data: stages.map(function (st) { return st.time_fwd; }) });
    series.push({ name: 'backward per micro-batch (s)', type: 'line', yAxisIndex: 1, symbolSize: 8,
      itemStyle: { color: color('compute_bwd') }, lineStyle: { color: color('compute_bwd') },
      data: stages.map(function (st) { return st.time_bwd; }) });
    if (series.length && memLimit) {
      series[0].markLine = {
        symbol: 'none', silent: true, lineStyle: { color: '#d62728', type: 'dashed', width: 2 },
        label: { formatter: limitName, position: 'insideEndTop' }, data: [{ yAxis: gib(memLimit) }]
      };
    }
    return Object.assign({
      title: { text: '3. Pipeline stages of rank ' + rank + ' (pp=' + t.pp_degree + (t.vpp_degree > 1 ? ', vpp=' + t.vpp_degree : '') + ')',
        left: 12, subtext: 'bars: memory per GPU by category (GiB); lines: compute time per micro-batch (s)' },
      tooltip: {
        trigger: 'axis', confine: true,
        formatter: function (ps) {
          var st = stages[ps[0].dataIndex];
          var s = '<b>rank ' + rank + ', stage ' + st.stage + '</b>: layers ' + esc(st.layers) + ' (' + st.num_layers +
            ', ' + st.recompute_layers + ' recomputed), memory ' + f(gib(st.total), 2) + ' GiB';
          if ((st.chunks || []).length > 1) {
            s += '<br>model chunks (virtual stage: layers): ' + st.chunks.map(function (c) {
              return c.virtual_stage + ': ' + (c.last < c.first ? 'none' : (c.first === c.last ? c.first : c.first + '-' + c.last));
            }).join('; ');
          }
          s += strategyBlock(t.strategy_text);
          ps.forEach(function (p) {
            if (p.value > 0) s += p.marker + esc(p.seriesName) + ': ' + (p.seriesType === 'line' ? f(p.value, 4) + ' s' : f(p.value, 2) + ' GiB') + '<br>';
          });
          return s;
        }
      },
      legend: { bottom: 0 },
      grid: { left: 60, right: 70, top: 80, bottom: 104 },
      // about six labels across (every stage in the tooltip and the table)
      xAxis: { type: 'category', data: labels,
        axisLabel: { fontSize: 10, lineHeight: 13, margin: 10, interval: Math.max(0, Math.ceil(stages.length / (t.vpp_degree > 1 ? 6 : 10)) - 1) } },
      yAxis: [{ type: 'value', name: 'GiB', max: memMax },
        { type: 'value', name: 's / micro-batch', splitLine: { show: false } }],
      series: series
    }, animation);
  }
  var c3 = chart('chart3', topk.length > 0, function () { return stageOption(defaultStageRank); });
  if (c3) noteColors(c3);
  if (stageSelect && c3) {
    stageSelect.value = String(defaultStageRank);
    stageSelect.addEventListener('change', function () {
      c3.setOption(stageOption(Number(stageSelect.value)), true);
      noteColors(c3);
    });
  }

  // 4. feasible vs infeasible
  var counts = D.counts;
  chart('chart4', counts.generated > 0, function () {
    var data = [
      { name: 'feasible', value: counts.feasible, itemStyle: { color: '#2ca02c' } },
      { name: 'over a limit (estimated)', value: counts.infeasible, itemStyle: { color: '#ff7f0e' } },
      { name: 'filtered early', value: counts.filtered_early, itemStyle: { color: '#9e9e9e' } }
    ];
    return Object.assign({
      title: { text: '4. Feasible vs infeasible candidates', subtext: counts.generated.toLocaleString('en-US') + ' candidates generated of a space of ' + counts.space_size.toLocaleString('en-US') },
      tooltip: { trigger: 'item', formatter: function (p) { return esc(p.name) + ': ' + p.value.toLocaleString('en-US') + ' (' + f(p.percent, 1) + '%)'; } },
      legend: { bottom: 0, data: data.map(function (x) { return x.name; }) },
      series: [{ type: 'pie', radius: ['35%', '62%'], center: ['50%', '52%'], avoidLabelOverlap: true,
        labelLine: { length: 18, length2: 14 },
        // name over count: a line height the default font fits (the
        // default packed the two lines into each other)
        label: { lineHeight: 16, formatter: function (p) { return p.name + '\n' + p.value.toLocaleString('en-US'); } },
        data: data.filter(function (x) { return x.value > 0; }) }]
    }, animation);
  });

  // 5. filter reasons, counted
  var reasons = D.reasons || [];
  chart('chart5', reasons.length > 0, function () {
    var codes = reasons.map(function (r) { return r.code; }).reverse();
    function ser(name, phase, color) {
      return { name: name, type: 'bar', stack: 'n', itemStyle: { color: color },
        label: { show: true, position: 'right', formatter: function (p) { return p.value ? p.value.toLocaleString('en-US') : ''; } },
        data: reasons.map(function (r) { return r.phase === phase ? r.count : 0; }).reverse() };
    }
    return Object.assign({
      title: { text: '5. Filter reasons', subtext: 'candidates per reason code (grey: filtered before the estimate)' },
      tooltip: {
        trigger: 'axis', axisPointer: { type: 'shadow' }, confine: true,
        formatter: function (ps) {
          var r = reasons[reasons.length - 1 - ps[0].dataIndex];
          return '<b>' + esc(r.code) + '</b>: ' + r.count.toLocaleString('en-US') + ' candidates (' + esc(r.phase === 'early' ? 'filtered early' : 'after the estimate') +
            ', rule ' + esc(r.rule || '-') + ')<br>e.g. ' + esc(r.message || '') + strategyBlock('example: ' + r.example_text);
        }
      },
      legend: { bottom: 0 },
      grid: { left: 150, right: 70, top: 70, bottom: 50 },
      xAxis: { type: 'value', name: 'candidates' },
      yAxis: { type: 'category', data: codes },
      series: [ser('filtered early', 'early', '#9e9e9e'), ser('over a limit (estimated)', 'estimate', '#ff7f0e')]
    }, animation);
  });

  // 6. trends: best step time and its memory per dp / tp / pp / cp (/ ep) degree
  var trends = D.trends || [];
  // level degree labels the chart's width holds, shared by its panels
  var TREND_LEVEL_LABELS = 24;
  chart('chart6', trends.some(function (t) { return t.points.length > 0; }), function () {
    var n = trends.length, grids = [], xs = [], ys = [], series = [];
    var w = 100 / n;
    // one step axis and one memory axis for every panel, so that bars of
    // two panels compare by height: from 0 to a round value above the
    // largest of all panels
    var stepMax = 0, memMax = 0;
    trends.forEach(function (t) {
      t.points.forEach(function (p) { stepMax = Math.max(stepMax, p.step_time || 0); memMax = Math.max(memMax, gib(p.mem_peak)); });
    });
    function ceilNice(v) {
      if (!(v > 0)) return undefined;
      var p = Math.pow(10, Math.floor(Math.log(v) / Math.LN10)), m = v / p;
      return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * p;
    }
    stepMax = ceilNice(stepMax); memMax = ceilNice(memMax);
    trends.forEach(function (t, i) {
      grids.push({ left: (i * w + 4) + '%', width: (w - 9) + '%', top: 80, bottom: 84 });
      // every degree labelled (ECharts' automatic interval skips some, and
      // the degrees are not evenly spaced: a bar without its label reads as
      // the missing degree); slanted when they would not fit level
      var slant = t.points.length > TREND_LEVEL_LABELS / n;
      xs.push({ type: 'category', gridIndex: i, name: t.label, nameLocation: 'middle', nameGap: slant ? 40 : 28,
        axisLabel: { interval: 0, rotate: slant ? 45 : 0, fontSize: 10 },
        data: t.points.map(function (p) { return String(p.value); }) });
      ys.push({ type: 'value', gridIndex: i, name: i === 0 ? 'best step time (s)' : '', splitLine: { show: true }, min: 0, max: stepMax });
      ys.push({ type: 'value', gridIndex: i, name: i === n - 1 ? 'its memory (GiB)' : '', position: 'right', splitLine: { show: false }, min: 0, max: memMax });
      series.push({ name: 'best step time (s)', type: 'bar', xAxisIndex: i, yAxisIndex: 2 * i, itemStyle: { color: '#5470c6' },
        data: t.points.map(function (p) { return p.step_time; }) });
      series.push({ name: 'its peak memory (GiB)', type: 'line', xAxisIndex: i, yAxisIndex: 2 * i + 1, itemStyle: { color: '#ee6666' }, symbolSize: 8,
        data: t.points.map(function (p) { return gib(p.mem_peak); }) });
    });
    return Object.assign({
      title: { text: '6. Trends: the best feasible strategy at each degree', subtext: 'bars: least step time among feasible candidates with that degree; line: that strategy\'s peak memory' },
      tooltip: {
        trigger: 'item', confine: true,
        formatter: function (p) {
          var t = trends[Math.floor(p.seriesIndex / 2)], pt = t.points[p.dataIndex];
          return '<b>' + esc(t.label) + ' = ' + pt.value + '</b>: best step ' + f(pt.step_time, 3) + ' s, peak ' + f(gib(pt.mem_peak), 2) + ' GiB' +
            (pt.rank ? ' (rank ' + pt.rank + ')' : '') + strategyBlock(pt.strategy_text);
        }
      },
      legend: { bottom: 0, data: ['best step time (s)', 'its peak memory (GiB)'] },
      grid: grids, xAxis: xs, yAxis: ys, series: series
    }, animation);
  });

  // 7. memory vs step time of the feasible candidates, Pareto front marked
  var sc = D.scatter || { points: [], dims: [] };
  function pointText(p) {
    var parts = [];
    for (var i = 0; i < sc.dims.length; i++) parts.push(sc.dims[i] + '=' + p[3 + i]);
    return parts.join(' ') + (sc.fixed_text ? ' ' + sc.fixed_text : '');
  }
  // zoom: the mouse wheel and the sliders on both axes; the checkbox above
  // the chart switches both axes to a log scale
  var logBox = document.getElementById('scatter-log');
  var SCATTER_TOPK_SPAN = 1.6;
  // a rank label's box on the canvas: about 7 px per character of its 11 px
  // font, 14 px high; the plot is the chart's box less its grid margins
  var RANK_CHAR_PX = 7, RANK_LABEL_PX = 14, SCATTER_MARGIN_X = 134, SCATTER_MARGIN_Y = 176;
  // "#1-#4" for consecutive ranks, "#1, #3" otherwise
  function rankText(ranks) {
    var parts = [], i = 0;
    while (i < ranks.length) {
      var j = i;
      while (j + 1 < ranks.length && ranks[j + 1] === ranks[j] + 1) j++;
      parts.push(j > i + 1 ? '#' + ranks[i] + '-#' + ranks[j] : (j > i ? '#' + ranks[i] + ', #' + ranks[j] : '#' + ranks[i]));
      i = j + 1;
    }
    return parts.join(', ');
  }
  // the rank labels of the top-k: ranks whose points lie within a label's
  // box of the best rank of a group (at the chart's opening scale) share
  // its one label ("#1-#4"), the others none, so that coincident plans
  // are all named instead of one label hiding the rest; rank -> text
  function rankLabels(log, yLo, yHi) {
    var el = document.getElementById('chart7');
    var w = Math.max(200, (el ? el.clientWidth : 1000) - SCATTER_MARGIN_X);
    var h = Math.max(100, (el ? el.clientHeight : 420) - SCATTER_MARGIN_Y);
    var T = log ? function (v) { return Math.log(Math.max(v, 1e-12)); } : function (v) { return v; };
    var xlo = Infinity, xhi = -Infinity;
    sc.points.forEach(function (p) { xlo = Math.min(xlo, T(p[0])); xhi = Math.max(xhi, T(p[0])); });
    topk.forEach(function (t) { xlo = Math.min(xlo, T(gib(t.mem_peak))); xhi = Math.max(xhi, T(gib(t.mem_peak))); });
    var xs = w / Math.max(xhi - xlo, 1e-9), ys = h / Math.max(T(yHi) - T(yLo), 1e-9);
    var groups = [], labels = {};
    topk.slice().sort(function (a, b) { return a.rank - b.rank; }).forEach(function (t) {
      var x = T(gib(t.mem_peak)) * xs, y = T(t.step_time) * ys, g = null;
      for (var i = 0; i < groups.length && !g; i++) {
        var q = groups[i];
        if (Math.abs(x - q.x) < RANK_CHAR_PX * 6 && Math.abs(y - q.y) < RANK_LABEL_PX) g = q;
      }
      if (g) g.ranks.push(t.rank); else groups.push({ x: x, y: y, ranks: [t.rank] });
    });
    groups.forEach(function (g) {
      g.ranks.forEach(function (r, i) { labels[r] = i === 0 ? rankText(g.ranks) : ''; });
    });
    return labels;
  }
  function scatterOption(log) {
    var front = D.front || [];
    var series = [
      { name: 'feasible candidates', type: 'scatter', symbolSize: sc.points.length > 2000 ? 4 : 7,
        large: sc.points.length > 2000, itemStyle: { color: 'rgba(84,112,198,0.55)' },
        data: sc.points.map(function (p) { return [p[0], p[1], p[2]]; }) },
      { name: 'Pareto front', type: 'line', step: false, symbolSize: 7, z: 3,
        itemStyle: { color: '#fc8452' }, lineStyle: { width: 2 },
        data: front.map(function (p) { return [gib(p.mem_peak), p.step_time, p.index]; }) },
      { name: 'top-k', type: 'scatter', symbol: 'diamond', symbolSize: 12, z: 4,
        itemStyle: { color: '#d62728' },
        label: { show: true, position: 'right', fontSize: 11, formatter: function (p) { return labels[p.data[3]] || ''; } },
        // coincident ranks share one label (rankLabels); the rest never
        // overlap: moved apart vertically, hidden when still in the way
        // (zoom in to read them)
        labelLayout: { moveOverlap: 'shiftY', hideOverlap: true },
        labelLine: { show: true, length2: 4, lineStyle: { color: '#999' } },
        data: topk.map(function (t) { return [gib(t.mem_peak), t.step_time, t.index, t.rank]; }) }
    ];
    if (memLimit) {
      series[0].markLine = {
        symbol: 'none', silent: true, lineStyle: { color: '#d62728', type: 'dashed', width: 2 },
        label: { formatter: limitName + ' ' + f(gib(memLimit), 1) + ' GiB', position: 'end' },
        data: [{ xAxis: gib(memLimit) }]
      };
    }
    var byIndex = {};
    sc.points.forEach(function (p) { byIndex[p[2]] = p; });
    var frontBy = {};
    front.forEach(function (p) { frontBy[p.index] = p; });
    // slow outliers (up to 40x the best step in a wide space) squeeze the
    // top-k onto the bottom line, their rank labels over each other: the
    // step axis opens on the top-k, from the fastest point to
    // SCATTER_TOPK_SPAN times the slowest rank (the sliders and the
    // reset button show every point)
    var yZoom = {};
    var lo = Infinity, hi = 0, worst = 0;
    sc.points.forEach(function (p) { if (p[1] > 0) { lo = Math.min(lo, p[1]); hi = Math.max(hi, p[1]); } });
    topk.forEach(function (t) { worst = Math.max(worst, t.step_time || 0); });
    if (!log && worst > 0 && hi > SCATTER_TOPK_SPAN * worst) {
      yZoom = { startValue: lo, endValue: SCATTER_TOPK_SPAN * worst };
    }
    root.setAttribute('data-scatter-topk-zoom', yZoom.endValue ? f(yZoom.endValue, 3) : '0');
    topk.forEach(function (t) { lo = Math.min(lo, t.step_time); hi = Math.max(hi, t.step_time); });
    var labels = rankLabels(log, lo, yZoom.endValue || hi);
    function axis(name, extra) {
      var a = { type: log ? 'log' : 'value', name: name, scale: true,
        axisLabel: { formatter: function (v) { return +Number(v).toPrecision(4); } } };
      if (log) a.logBase = 10;
      return Object.assign(a, extra);
    }
    return Object.assign({
      title: { text: '7. Memory vs step time of every feasible candidate',
        subtext: (sc.shown < sc.total ? 'showing ' + sc.shown.toLocaleString('en-US') + ' of ' + sc.total.toLocaleString('en-US') + ' (about 1 in ' + sc.stride + ' feasible candidates, an even sample; front and top-k always)' : sc.total.toLocaleString('en-US') + ' feasible candidates') +
          '; orange: Pareto front; wheel or sliders: zoom' + (log ? '; log scales' : '') +
          (yZoom.endValue ? '; step axis opened on the top-k (reset shows every point)' : '') },
      tooltip: {
        trigger: 'item', confine: true,
        formatter: function (p) {
          var idx = p.data[2], text, head;
          if (p.seriesName === 'top-k') { var t = byRank[p.data[3]]; head = '<b>rank ' + t.rank + '</b>'; text = t.strategy_text; }
          else if (frontBy[idx]) { head = '<b>Pareto front</b>' + (frontBy[idx].rank ? ' (rank ' + frontBy[idx].rank + ')' : ''); text = frontBy[idx].strategy_text; }
          else { head = 'candidate #' + idx; text = byIndex[idx] ? pointText(byIndex[idx]) : ''; }
          return head + ': step ' + f(p.data[1], 3) + ' s, peak ' + f(p.data[0], 2) + ' GiB' + strategyBlock(text);
        }
      },
      toolbox: { right: 150, top: 4, feature: { dataZoom: { title: { zoom: 'zoom a box', back: 'undo zoom' } }, restore: { title: 'reset' } } },
      dataZoom: [
        { type: 'inside', xAxisIndex: 0, filterMode: 'none' },
        Object.assign({ type: 'inside', yAxisIndex: 0, filterMode: 'none' }, yZoom),
        { type: 'slider', xAxisIndex: 0, filterMode: 'none', height: 18, bottom: 34 },
        Object.assign({ type: 'slider', yAxisIndex: 0, filterMode: 'none', width: 18, right: 8 }, yZoom)
      ],
      legend: { bottom: 0 },
      grid: { left: 64, right: 70, top: 80, bottom: 96 },
      xAxis: axis('peak memory per GPU (GiB)', { nameLocation: 'middle', nameGap: 26 }),
      yAxis: (function () {
        var a = axis('step time (s)', {});
        // the window's top is no round number: no label of its own
        if (yZoom.endValue) a.axisLabel.showMaxLabel = false;
        return a;
      })(),
      series: series
    }, animation);
  }
  var c7 = chart('chart7', sc.points.length > 0, function () { return scatterOption(false); });
  if (logBox && c7) {
    logBox.addEventListener('change', function () {
      c7.setOption(scatterOption(logBox.checked), true);
      root.setAttribute('data-scatter-log', logBox.checked ? '1' : '0');
    });
  }
  if (logBox && !c7) logBox.disabled = true;
  // the top-k ranks no drawn label names (hidden behind another, or never
  // drawn): the selftest's data-scatter-ranks-unlabelled, 0 expected
  function unlabelledRanks(c) {
    var named = {};
    c.getZr().storage.getDisplayList(true).forEach(function (el) {
      if ((el.type !== 'tspan' && el.type !== 'text') || el.invisible || !el.style) return;
      String(el.style.text || '').replace(/#(\d+)(?:-#(\d+))?/g, function (m, a, b) {
        for (var r = +a; r <= +(b || a); r++) named[r] = true;
        return m;
      });
    });
    return topk.filter(function (t) { return !named[t.rank]; }).map(function (t) { return t.rank; });
  }
  if (c7 && /selftest/.test(location.search)) {
    c7.on('finished', function () {
      try { root.setAttribute('data-scatter-ranks-unlabelled', unlabelledRanks(c7).join(' ')); } catch (e) {
        root.setAttribute('data-scatter-ranks-unlabelled', 'error: ' + e);
      }
    });
  }
  if (c7 && logBox && /selftest/.test(location.search)) {
    try {
      var axType = function () { var o = c7.getOption(); return o.xAxis[0].type + ',' + o.yAxis[0].type; };
      logBox.checked = true; logBox.dispatchEvent(new Event('change'));
      var on = axType();
      logBox.checked = false; logBox.dispatchEvent(new Event('change'));
      var off = axType();
      var zoom = (c7.getOption().dataZoom || []).length;
      root.setAttribute('data-log-test', on === 'log,log' && off === 'value,value' && zoom === 4 ? 'ok' :
        'log ' + on + ', off ' + off + ', ' + zoom + ' dataZoom');
    } catch (e) { root.setAttribute('data-log-test', 'error: ' + e); }
  }

  // 8. step time of the top-k as the inter-node bandwidth is scaled
  var bw = D.sensitivity;
  // the colours of ECharts' default palette, and the symbols of each lap
  // through it
  var RANK_PALETTE = 9, RANK_SYMBOLS = ['emptyCircle', 'triangle', 'rect'];
  chart('chart8', !!(bw && bw.series && bw.series.length), function () {
    return Object.assign({
      title: { text: '8. Step time vs inter-node bandwidth',
        subtext: 'top-k re-estimated with the bandwidth scaled (x1 = ' + f(bw.base_value / 1e9, 1) + ' GB/s per GPU)' + (bw.single_node ? '; one node: no inter-node traffic' : '') },
      tooltip: {
        trigger: 'axis', confine: true,
        formatter: function (ps) {
          var s = '<b>inter-node bandwidth x' + bw.factors[ps[0].dataIndex] + '</b> (' + f(bw.base_value * bw.factors[ps[0].dataIndex] / 1e9, 1) + ' GB/s)<br>';
          ps.forEach(function (p) {
            var t = byRank[bw.series[p.seriesIndex].rank];
            s += p.marker + 'rank ' + t.rank + ': ' + f(p.value, 3) + ' s <span class="tt-small">' + esc(t.short_text) + '</span><br>';
          });
          return s;
        }
      },
      legend: { type: 'scroll', bottom: 0 },
      grid: { left: 60, right: 30, top: 80, bottom: 60 },
      xAxis: { type: 'category', name: 'bandwidth', data: bw.factors.map(function (x) { return 'x' + x; }) },
      yAxis: { type: 'value', name: 'step time (s)', scale: true },
      // ECharts' palette has 9 colours: ranks past it keep a colour of
      // their own by their line's dash and symbol (#10 is not #1)
      series: bw.series.map(function (s, i) {
        var lap = Math.floor(i / RANK_PALETTE);
        return { name: rankLabel(s.rank), type: 'line', symbolSize: 7, data: s.step_time,
          symbol: RANK_SYMBOLS[lap % RANK_SYMBOLS.length],
          lineStyle: { type: lap === 0 ? 'solid' : lap === 1 ? 'dashed' : 'dotted' } };
      })
    }, animation);
  });

  // pairs of x-axis labels of a chart that overlap or touch on the canvas
  // (closer than LABEL_GAP px): the texts drawn in the band under the
  // lowest grid, by their drawn boxes (the selftest of chart 9:
  // data-gantt-label-overlaps, 0 expected)
  var LABEL_GAP = 4;
  function axisLabelOverlaps(c) {
    var bottom = 0;
    c.getModel().eachComponent('grid', function (g) {
      var r = g.coordinateSystem && g.coordinateSystem.getRect();
      if (r) bottom = Math.max(bottom, r.y + r.height);
    });
    var boxes = [];
    c.getZr().storage.getDisplayList(true).forEach(function (el) {
      // zrender draws a text as 'tspan' pieces
      if ((el.type !== 'tspan' && el.type !== 'text') || el.invisible || !el.style || !el.style.text) return;
      var r = el.getBoundingRect().clone();
      if (el.transform) r.applyTransform(el.transform);
      if (r.y >= bottom - 1 && r.y < bottom + 16 && r.width > 0) boxes.push(r);
    });
    var n = 0;
    for (var i = 0; i < boxes.length; i++) {
      for (var j = i + 1; j < boxes.length; j++) {
        var a = boxes[i], b = boxes[j];
        if (a.x < b.x + b.width + LABEL_GAP && b.x < a.x + a.width + LABEL_GAP &&
            a.y < b.y + b.height && b.y < a.y + a.height) n += 1;
      }
    }
    return n;
  }

  // 9. the Gantt chart of the simulated pipeline schedule: a row per
  // pipeline rank, a bar per op coloured by kind, idle time as gaps; when
  // ranks ran more ops than were kept, two panels: the start and the end
  var TL = D.timeline;
  if (TL && document.getElementById('chart9')) {
    var kinds = ['F', 'B', 'I', 'W'];
    var wins = TL.windows || [[0, TL.step]];
    var nr = TL.ranks.length;
    // one line per row (rows are 26 px): the rank and its idle share
    var rowNames = TL.ranks.map(function (r) {
      return 'stage ' + r.rank + ' \u00b7 idle ' + f(100 * r.idle_fraction, 1) + '%';
    });
    var drawnOps = 0;
    var c9 = chart('chart9', nr > 0, function () {
      var grids = [], xs = [], ys = [], series = [];
      // the rank labels take LEFT px; the panels share the rest
      var LEFT = 128, RIGHT = 24, GAP = 28;
      var width = (document.getElementById('chart9').clientWidth || 1200) - LEFT - RIGHT;
      var w = (width - GAP * (wins.length - 1)) / wins.length;
      wins.forEach(function (win, g) {
        grids.push({ left: LEFT + g * (w + GAP), width: w, top: wins.length > 1 ? 100 : 84, bottom: 58 });
        var name = wins.length > 1 ? (g === 0 ? 'time from the start (s)' : 'time to the end (s)') : 'time (s)';
        // the panels' inner edges (where the middle is cut, said in the
        // subtitle) carry no label, which would run into the next panel's;
        // a label that would touch its neighbour is hidden
        xs.push({ type: 'value', gridIndex: g, min: win[0], max: win[1], name: name,
          nameLocation: 'middle', nameGap: 26,
          axisLabel: { formatter: function (v) { return +Number(v).toPrecision(4); }, hideOverlap: true,
            showMinLabel: g > 0 ? false : null, showMaxLabel: g < wins.length - 1 ? false : null } });
        ys.push({ type: 'category', gridIndex: g, inverse: true, data: rowNames,
          axisLabel: { show: g === 0, fontSize: 11, interval: 0 }, axisTick: { show: false },
          splitLine: { show: true, lineStyle: { color: '#eef1f4' } } });
      });
      // the bars of one kind in one panel; ops crossing a panel's edge are
      // clipped to it (every op overlapping a window is in the data)
      function renderItem(params, api) {
        var y = api.value(0), s = api.value(1), e = api.value(2);
        var a = api.coord([s, y]), b = api.coord([e, y]);
        var h = api.size([0, 1])[1] * 0.64;
        var cs = params.coordSys;
        var rect = echarts.graphic.clipRectByRect(
          { x: a[0], y: a[1] - h / 2, width: Math.max(b[0] - a[0], 0.5), height: h },
          { x: cs.x, y: cs.y, width: cs.width, height: cs.height });
        if (!rect) return null;
        var ov = api.value(6) === 1;
        var item = { type: 'rect', shape: rect, style: api.style({ stroke: ov ? '#1f2328' : 'rgba(255,255,255,0.8)', lineWidth: ov ? 1 : 0.5 }) };
        var label = String(api.value(3));
        if (rect.width > 7 * label.length + 4) {
          return { type: 'group', children: [item, { type: 'text', silent: true,
            style: { text: label, x: rect.x + rect.width / 2, y: rect.y + rect.height / 2, align: 'center', verticalAlign: 'middle',
              fill: '#fff', fontSize: 10 } }] };
        }
        return item;
      }
      wins.forEach(function (win, g) {
        kinds.forEach(function (k) {
          var data = [];
          TL.ranks.forEach(function (r, i) {
            r.events.forEach(function (ev) {
              if (ev[0] !== k || ev[5] < win[0] || ev[4] > win[1]) return;
              // [row, start, end, micro-batch, stage, chunk, overlap]
              data.push([i, ev[4], ev[5], ev[1], ev[2], ev[3], ev[6]]);
            });
          });
          drawnOps += data.length;
          if (!data.length && g > 0) return;
          series.push({ name: TL.names[k] || k, type: 'custom', xAxisIndex: g, yAxisIndex: g,
            renderItem: renderItem, itemStyle: { color: TL.colors[k] || '#888888' },
            encode: { x: [1, 2], y: 0 }, data: data });
        });
      });
      var sub = 'pipeline ' + f(TL.step, 4) + ' s; bubble ' + f(TL.bubble, 4) + ' s = ' + f(100 * TL.bubble_fraction, 1) +
        '% (idle time of the busiest stage, ' + TL.slowest_rank + '); gaps: a stage idle; bar label: micro-batch' +
        (TL.schedule === 'DualPipeV' ? '; outlined: an overlapped F+B pair' : '');
      if (wins.length > 1) {
        sub += '\nleft: the start of the step, right: its end (' + TL.ops_kept.toLocaleString('en-US') + ' of ' +
          TL.ops.toLocaleString('en-US') + ' ops); the middle, ' + f(wins[0][1], 3) + ' s to ' + f(wins[1][0], 3) + ' s, is left out';
      }
      return Object.assign({
        title: { text: '9. Pipeline schedule of the top-k rank ' + TL.rank + ': ' + TL.schedule + ' (pp=' + TL.pp_degree +
          (TL.vpp_degree > 1 ? ', vpp=' + TL.vpp_degree : '') + ', ' + TL.micro_batch_num + ' micro-batches)', subtext: sub, left: 12,
          subtextStyle: { lineHeight: 16 } },
        tooltip: {
          trigger: 'item', confine: true,
          formatter: function (p) {
            var v = p.value, r = TL.ranks[v[0]];
            return p.marker + '<b>' + esc(p.seriesName) + '</b>, micro-batch ' + v[3] + '<br>pipeline rank ' + r.rank +
              ', model chunk ' + v[5] + ' (virtual stage ' + v[4] + ')' + (v[6] === 1 ? ', overlapped F+B pair' : '') +
              '<br>' + f(v[1], 4) + ' - ' + f(v[2], 4) + ' s (' + f(v[2] - v[1], 4) + ' s)';
          }
        },
        legend: { bottom: 0, data: kinds.filter(function (k) {
          return TL.ranks.some(function (r) { return r.events.some(function (ev) { return ev[0] === k; }); });
        }).map(function (k) { return TL.names[k] || k; }) },
        grid: grids, xAxis: xs, yAxis: ys, series: series
      }, animation);
    });
    root.setAttribute('data-gantt', 'ops=' + drawnOps + ' ranks=' + nr + ' windows=' + wins.length);
    if (c9 && /selftest/.test(location.search)) {
      c9.on('finished', function () {
        try { root.setAttribute('data-gantt-label-overlaps', String(axisLabelOverlaps(c9))); } catch (e) {
          root.setAttribute('data-gantt-label-overlaps', 'error: ' + e);
        }
      });
    }
  }

  if (expected === 0) root.setAttribute('data-charts-ok', '0');
})();
