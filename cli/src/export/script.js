// pith session export: switch the shown branch, filter and search the tree, fold output.
// Entries are addressed by their index in the file: message #e<i>, tree row #t<i>.
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('pith-data').textContent);
  var parent = data.parent, newest = data.newest, sessionLeaf = data.leaf;
  var n = parent.length;
  var box = document.getElementById('messages');
  var treeEl = document.getElementById('tree');
  var picker = document.getElementById('branch');
  var onPath = new Uint8Array(n);
  var path = [];
  var reordered = false;
  var shownRows = n;

  function pathTo(leaf) {
    var p = [];
    for (var i = leaf; i >= 0 && p.length <= n; i = parent[i]) p.push(i);
    return p.reverse();
  }
  function msg(i) { return document.getElementById('e' + i); }
  function row(i) { return document.getElementById('t' + i); }
  function idOf(i) { var r = row(i); return r ? r.getAttribute('data-id') : String(i); }

  // Shows the branch from the root to `leaf`; only elements whose state changes are touched,
  // so switching between branches that share a long stem stays cheap.
  function show(leaf) {
    if (!(leaf >= 0 && leaf < n)) return;
    var next = pathTo(leaf);
    var nextOn = new Uint8Array(n);
    var i, k;
    for (k = 0; k < next.length; k++) nextOn[next[k]] = 1;
    for (k = 0; k < path.length; k++) {
      i = path[k];
      if (!nextOn[i]) { msg(i).classList.add('off'); row(i).classList.remove('on'); }
    }
    for (k = 0; k < next.length; k++) {
      i = next[k];
      if (!onPath[i]) { msg(i).classList.remove('off'); row(i).classList.add('on'); }
    }
    // Messages are written in file order; a parent written after its child (a repaired file)
    // needs the branch put in path order.
    var ascending = true;
    for (k = 1; k < next.length; k++) if (next[k] < next[k - 1]) { ascending = false; break; }
    if (!ascending || reordered) {
      for (k = 0; k < next.length; k++) box.appendChild(msg(next[k]));
      reordered = true;
    }
    onPath = nextOn;
    path = next;
    var chunks = box.querySelectorAll('.chunk');
    for (k = 0; k < chunks.length; k++) {
      chunks[k].classList.toggle('empty', !chunks[k].querySelector('.e:not(.off)'));
    }
    var forks = document.querySelectorAll('.fork .go');
    for (k = 0; k < forks.length; k++) {
      forks[k].classList.toggle('cur', onPath[+forks[k].getAttribute('data-c')] === 1);
    }
    if (picker) picker.value = String(leaf);
    var shown = document.getElementById('shown-branch');
    if (shown) {
      shown.textContent = 'ends at entry ' + idOf(leaf) +
        (leaf === sessionLeaf ? " (the session's leaf)" : " (not the session's leaf)") +
        ', ' + path.length + ' entries';
    }
    status();
  }

  function status() {
    document.getElementById('tree-status').textContent =
      shownRows + ' / ' + n + ' entries in the tree, ' + path.length + ' on the shown branch';
  }

  function reveal(i) {
    var el = msg(i);
    if (!el || el.classList.contains('off')) return;
    el.scrollIntoView({ block: 'center' });
    el.classList.add('highlight');
    setTimeout(function () { el.classList.remove('highlight'); }, 1500);
  }

  function markTarget(i) {
    var old = treeEl.querySelector('.tn.target');
    if (old) old.classList.remove('target');
    var r = row(i);
    if (r) r.classList.add('target');
  }

  // The server marked the session's branch; take it over without touching the DOM.
  if (sessionLeaf >= 0) {
    path = pathTo(sessionLeaf);
    for (var k = 0; k < path.length; k++) onPath[path[k]] = 1;
  }

  // pi's deep links: ?leafId=<entry id>&targetId=<entry id>.
  var params = new URLSearchParams(window.location.search);
  function indexOfId(id) {
    if (!id) return -1;
    var r = treeEl.querySelector('.tn[data-id="' + CSS.escape(id) + '"]');
    return r ? +r.getAttribute('data-i') : -1;
  }
  var urlLeaf = indexOfId(params.get('leafId'));
  var urlTarget = indexOfId(params.get('targetId'));
  show(urlLeaf >= 0 ? urlLeaf : sessionLeaf);
  if (urlTarget >= 0) { markTarget(urlTarget); setTimeout(function () { reveal(urlTarget); }, 0); }

  treeEl.addEventListener('click', function (e) {
    var r = e.target.closest('.tn');
    if (!r || String(window.getSelection())) return;
    var i = +r.getAttribute('data-i');
    show(newest[i]);
    markTarget(i);
    reveal(i);
  });

  box.addEventListener('click', function (e) {
    var go = e.target.closest('.go');
    if (go) {
      var fork = go.closest('.e');
      var before = fork.getBoundingClientRect().top;
      show(+go.getAttribute('data-leaf'));
      document.getElementById('content').scrollTop += fork.getBoundingClientRect().top - before;
      return;
    }
    var jump = e.target.closest('.jump');
    if (jump) {
      e.preventDefault();
      var t = +jump.getAttribute('data-go');
      if (!onPath[t]) show(newest[t]);
      markTarget(t);
      reveal(t);
      return;
    }
    var long = e.target.closest('.long');
    if (long && !String(window.getSelection())) long.classList.toggle('open');
  });

  if (picker) picker.addEventListener('change', function () { show(+picker.value); });

  // Filters and search, as pi's sidebar: rows are hidden by script, and the indentation and
  // connectors of the rows left are recomputed (pi's recalculateVisualStructure) so hidden
  // entries leave no gaps in the drawing. Without script every row shows, drawn by the server.
  var rowEls = Array.prototype.slice.call(treeEl.querySelectorAll('.tn'));
  var rowOf = new Int32Array(rowEls.length);
  for (var r = 0; r < rowEls.length; r++) rowOf[r] = +rowEls[r].getAttribute('data-i');
  var filterMode = 'default';
  var tokens = [];

  function passes(el, i) {
    if (i === path[path.length - 1]) return true;
    var c = el.classList;
    if (c.contains('k-quiet')) return false;
    var ok;
    switch (filterMode) {
      case 'user': ok = c.contains('k-user'); break;
      case 'no-tools': ok = !c.contains('k-set') && !c.contains('k-tool'); break;
      case 'labeled': ok = c.contains('k-lab'); break;
      case 'all': ok = true; break;
      default: ok = !c.contains('k-set');
    }
    if (!ok || !tokens.length) return ok;
    var text = el.textContent.toLowerCase();
    return tokens.every(function (t) { return text.indexOf(t) >= 0; });
  }

  function relayout() {
    var visible = new Uint8Array(n);
    var shown = 0, j, i;
    for (j = 0; j < rowEls.length; j++) {
      i = rowOf[j];
      if (passes(rowEls[j], i)) { visible[i] = 1; shown++; }
      rowEls[j].classList.toggle('hid', !visible[i]);
    }
    // Rows are in preorder, so a parent's nearest visible ancestor is known before its child's.
    var nearest = new Int32Array(n).fill(-1);
    var kids = new Map();
    kids.set(-1, []);
    for (j = 0; j < rowEls.length; j++) {
      i = rowOf[j];
      var up = parent[i] >= 0 ? nearest[parent[i]] : -1;
      nearest[i] = visible[i] ? i : up;
      if (!visible[i]) continue;
      if (!kids.has(up)) kids.set(up, []);
      kids.get(up).push(i);
    }
    var roots = kids.get(-1);
    var multipleRoots = roots.length > 1;
    // [node, indent, justBranched, showConnector, isLast, gutters, isVirtualRootChild]
    var stack = [];
    for (j = roots.length - 1; j >= 0; j--) {
      stack.push([roots[j], multipleRoots ? 1 : 0, multipleRoots, multipleRoots,
        j === roots.length - 1, [], multipleRoots]);
    }
    while (stack.length) {
      var s = stack.pop();
      var node = s[0], indent = s[1], justBranched = s[2], showConnector = s[3];
      var isLast = s[4], gutters = s[5], virtualRootChild = s[6];
      var display = multipleRoots ? Math.max(0, indent - 1) : indent;
      var connector = showConnector && !virtualRootChild;
      var prefix = '';
      for (var level = 0; level < display; level++) {
        var g = null;
        for (var q = 0; q < gutters.length; q++) if (gutters[q].position === level) { g = gutters[q]; break; }
        if (g) prefix += (g.show ? '\u2502' : ' ') + '  ';
        else if (connector && level === display - 1) prefix += (isLast ? '\u2514' : '\u251c') + '\u2500 ';
        else prefix += '   ';
      }
      var tp = row(node).firstChild;
      if (tp.textContent !== prefix) tp.textContent = prefix;
      var children = kids.get(node) || [];
      var branching = children.length > 1;
      var childIndent = branching || (justBranched && indent > 0) ? indent + 1 : indent;
      var childGutters = connector
        ? gutters.concat([{ position: Math.max(0, display - 1), show: !isLast }])
        : gutters;
      for (j = children.length - 1; j >= 0; j--) {
        stack.push([children[j], childIndent, branching, branching,
          j === children.length - 1, childGutters, false]);
      }
    }
    shownRows = shown;
    status();
  }

  var filters = document.querySelectorAll('.filter');
  for (var f = 0; f < filters.length; f++) {
    filters[f].addEventListener('click', function () {
      for (var j = 0; j < filters.length; j++) filters[j].classList.remove('active');
      this.classList.add('active');
      filterMode = this.getAttribute('data-filter');
      relayout();
    });
  }

  var search = document.getElementById('tree-search');
  var timer = 0;
  search.addEventListener('input', function () {
    clearTimeout(timer);
    timer = setTimeout(function () {
      tokens = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      relayout();
    }, 150);
  });
  relayout();

  function toggleThinking() { document.body.classList.toggle('hide-thinking'); }
  function toggleOutput() { document.body.classList.toggle('show-output'); }
  document.querySelector('[data-action="thinking"]').addEventListener('click', toggleThinking);
  document.querySelector('[data-action="tools"]').addEventListener('click', toggleOutput);
  document.addEventListener('keydown', function (e) {
    var t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.tagName === 'TEXTAREA')) return;
    if (e.key === 't' || e.key === 'T') toggleThinking();
    if (e.key === 'o' || e.key === 'O') toggleOutput();
  });

  document.documentElement.setAttribute('data-ready', 'true');
})();
