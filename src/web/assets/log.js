/* global document, window, location, requestAnimationFrame, localStorage */
// The build page's log viewer. Each job's log loads when its panel opens (the page opens failed
// and running ones, and the one the URL's #<job-id> or #<job-id>/L<n> names), as numbered lines
// from the server's JSON (every line already escaped HTML, rendered there). Only the lines in
// view are in the DOM, so a 25 MB log scrolls as a small one. A running job's log is read on
// from the byte offset already shown, with the ANSI state token the last read ended with: on
// the page's live stream's `log` events (assets/build.js sends them here as `log:grow`), or every
// few seconds without one. Line numbers link (#<job-id>/L120); `_bk;t=` times show on demand;
// search counts matches and steps through them; follow keeps the end in view; sections fold.
(function () {
  'use strict';
  var LINE_PX = 18; // .ln's height in app.css
  var OVERSCAN = 30;
  var POLL_MS = 3000;
  var HEX = /^[0-9a-f]{6}$/;
  var LOG_BG = [0x1e, 0x1e, 0x1e]; // .log's background in app.css
  var ENTITIES = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };

  function plain(h) {
    return h.replace(/<[^>]*>/g, '').replace(/&(amp|lt|gt|quot|#39);/g, function (e) {
      return ENTITIES[e];
    });
  }
  function rgb(hex) {
    return [parseInt(hex.slice(0, 2), 16), parseInt(hex.slice(2, 4), 16), parseInt(hex.slice(4, 6), 16)];
  }
  function luminance(c) {
    var l = c.map(function (v) {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2];
  }
  function contrast(a, b) {
    var x = luminance(a) + 0.05;
    var y = luminance(b) + 0.05;
    return x > y ? x / y : y / x;
  }
  /** A log's colour made readable on its background (as terminals' minimum contrast does): lightened, or darkened on a light background, until 4.5:1. */
  function readable(fg, bg) {
    var toward = luminance(bg) > 0.18 ? 0 : 255;
    for (var i = 0; i < 20 && contrast(fg, bg) < 4.5; i++)
      fg = fg.map(function (v) {
        return Math.round(v + (toward - v) * 0.15);
      });
    return 'rgb(' + fg.join(', ') + ')';
  }
  function pad(n) {
    return n < 10 ? '0' + n : String(n);
  }
  function clock(ms) {
    var d = new Date(ms);
    return pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }
  function streaming() {
    return document.documentElement.dataset.live === 'stream';
  }

  function Viewer(root) {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the viewer's event handlers and callbacks need it
    var self = this;
    root.dataset.ready = '1';
    this.root = root;
    this.panel = root.closest('details.job-log');
    this.url = root.dataset.logUrl;
    this.jobId = root.dataset.jobId;
    this.lines = []; // {h, t, g, x, grp}
    this.groups = []; // {line, open, kind}
    this.tail = null;
    this.offset = 0;
    this.state = '';
    this.finished = root.dataset.finished === '1';
    this.done = false;
    this.loading = false;
    this.again = false;
    this.timer = 0;
    this.visible = [];
    this.hits = [];
    this.hit = -1;
    this.query = '';
    this.target = -1;
    this.started = false;
    this.programmatic = false;

    root.addEventListener('log:grow', function () {
      self.wake();
    });
    root.addEventListener('log:finished', function () {
      self.finished = true;
      self.wake();
    });
    if (this.panel) {
      this.panel.addEventListener('toggle', function () {
        if (self.panel.open) self.start();
      });
      if (this.panel.open) this.start();
    }
  }

  /** The toolbar and the lines' box, made when the log is first opened (a page of 200 jobs carries none of them). */
  Viewer.prototype.wire = function () {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the toolbar's handlers need it
    var self = this;
    var root = this.root;
    var name = root.dataset.name || 'the job';
    var tools = document.createElement('div');
    tools.className = 'log-tools';
    tools.setAttribute('role', 'toolbar');
    tools.setAttribute('aria-label', 'Log of ' + name);
    function el(tag, props, attrs) {
      var e = document.createElement(tag);
      Object.keys(props || {}).forEach(function (k) {
        e[k] = props[k];
      });
      Object.keys(attrs || {}).forEach(function (k) {
        e.setAttribute(k, attrs[k]);
      });
      return e;
    }
    function check(act, label, on) {
      var l = el('label');
      l.appendChild(el('input', { type: 'checkbox', checked: on }, { 'data-act': act }));
      l.appendChild(document.createTextNode(' ' + label));
      return l;
    }
    function button(act, text, label) {
      return el(
        'button',
        { type: 'button', className: 'secondary', textContent: text },
        label ? { 'data-act': act, 'aria-label': label } : { 'data-act': act },
      );
    }
    tools.appendChild(el('input', { type: 'search', className: 'log-search', placeholder: 'Search' }, { 'aria-label': 'Search the log of ' + name }));
    tools.appendChild(el('span', { className: 'log-count' }, { 'aria-live': 'polite' }));
    tools.appendChild(button('prev', '\u2191', 'Previous match'));
    tools.appendChild(button('next', '\u2193', 'Next match'));
    tools.appendChild(check('times', 'Times', false));
    tools.appendChild(check('follow', 'Follow', !this.finished));
    tools.appendChild(button('top', 'Top'));
    tools.appendChild(button('end', 'End'));
    var download = root.querySelector('a[download]');
    if (download) tools.appendChild(download);
    this.box = el('div', { className: 'log', tabIndex: 0 }, { role: 'log', 'aria-label': 'Log of ' + name });
    root.insertBefore(tools, root.firstChild);
    root.appendChild(this.box);
    this.count = tools.querySelector('.log-count');
    this.search = tools.querySelector('.log-search');
    this.followBox = tools.querySelector('[data-act="follow"]');

    tools.addEventListener('click', function (e) {
      var act = e.target && e.target.dataset ? e.target.dataset.act : '';
      if (act === 'prev') self.step(-1);
      else if (act === 'next') self.step(1);
      else if (act === 'top') self.scrollToRow(0);
      else if (act === 'end') self.scrollToEnd();
    });
    root.querySelector('[data-act="times"]').addEventListener('change', function (e) {
      self.box.classList.toggle('log-times', e.target.checked);
      try {
        localStorage.setItem('windsock.log.times', e.target.checked ? '1' : '');
      } catch {
        // Storage refused (private mode): the toggle still works on this page.
      }
    });
    try {
      if (localStorage.getItem('windsock.log.times') === '1') {
        root.querySelector('[data-act="times"]').checked = true;
        this.box.classList.add('log-times');
      }
    } catch {
      // As above.
    }
    var typing = 0;
    this.search.addEventListener('input', function () {
      clearTimeout(typing);
      typing = setTimeout(function () {
        self.find(self.search.value);
      }, 150);
    });
    this.search.addEventListener('keydown', function (e) {
      if (e.key === 'Enter') {
        e.preventDefault();
        if (self.search.value !== self.query) self.find(self.search.value);
        else self.step(e.shiftKey ? -1 : 1);
      }
    });
    this.box.addEventListener('scroll', function () {
      self.paint();
      if (self.programmatic) {
        self.programmatic = false;
        return;
      }
      // Scrolling up by hand stops following; reaching the end again resumes it.
      if (self.followBox && !self.finished) self.followBox.checked = self.atEnd();
    });
    this.box.addEventListener('click', function (e) {
      var row = e.target.closest ? e.target.closest('.ln-g') : null;
      if (row && !e.target.closest('a')) self.toggle(Number(row.dataset.i));
    });
  };

  Viewer.prototype.start = function () {
    if (this.started) {
      this.paint();
      return this.wake();
    }
    this.started = true;
    this.root.dataset.started = '1';
    this.wire();
    this.box.classList.add('log-windowed');
    this.box.innerHTML = '<div class="log-spacer"><div class="log-window"></div></div>';
    this.spacer = this.box.firstChild;
    this.win = this.spacer.firstChild;
    this.read();
  };

  Viewer.prototype.wake = function () {
    if (!this.started || this.done) return;
    if (this.loading) this.again = true;
    else this.read();
  };

  Viewer.prototype.read = function () {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the viewer's event handlers and callbacks need it
    var self = this;
    clearTimeout(this.timer);
    this.loading = true;
    this.again = false;
    var url = this.url + '?offset=' + this.offset + (this.state ? '&state=' + encodeURIComponent(this.state) : '');
    fetch(url, { headers: { Accept: 'application/json' }, credentials: 'same-origin' })
      .then(function (r) {
        if (!r.ok) throw new Error('HTTP ' + r.status);
        return r.json();
      })
      .then(function (part) {
        self.loading = false;
        self.take(part);
        self.box.setAttribute('aria-busy', part.finished ? 'false' : 'true');
        if (part.more || self.again) return self.read();
        if (part.finished) {
          self.done = true;
          self.finished = true;
          if (self.followBox) self.followBox.checked = false;
          return;
        }
        // Without the live stream, ask again in a while, only while the panel is open.
        if (!streaming() && self.panel && self.panel.open)
          self.timer = setTimeout(function () {
            self.read();
          }, POLL_MS);
      })
      .catch(function (e) {
        self.loading = false;
        self.win.textContent = 'The log could not be loaded (' + e.message + ').';
      });
  };

  /** Appends a read's lines (its tail replaces the last one shown). */
  Viewer.prototype.take = function (part) {
    var before = this.lines.length;
    for (var i = 0; i < part.lines.length; i++) this.push(part.lines[i]);
    this.tail = part.tail || null;
    this.offset = part.offset;
    this.state = part.state;
    if (part.finished && !part.more && !this.groups.some(isOpen)) {
      // No section expanded: the last `---` one is (as the real service shows a finished log).
      for (var g = this.groups.length - 1; g >= 0; g--)
        if (this.groups[g].kind === '---') {
          this.groups[g].open = true;
          break;
        }
    }
    var follow = this.followBox && this.followBox.checked;
    this.layout();
    if (this.query && this.lines.length > before) this.find(this.query, true);
    if (this.pendingLine) this.goTo(this.pendingLine);
    else if (follow) this.scrollToEnd();
  };

  function isOpen(g) {
    return g.open;
  }

  Viewer.prototype.push = function (line) {
    var i = this.lines.length;
    if (line.x) {
      // `^^^ +++`: opens the section it is in.
      if (this.groups.length) this.groups[this.groups.length - 1].open = true;
      line.grp = this.groups.length - 1;
    } else if (line.g) {
      this.groups.push({ line: i, open: line.g === '+++', kind: line.g });
      line.grp = this.groups.length - 1;
    } else line.grp = this.groups.length - 1;
    this.lines.push(line);
  };

  /** Which lines show (collapsed sections hide their lines, not their headers). */
  Viewer.prototype.layout = function () {
    var vis = [];
    for (var i = 0; i < this.lines.length; i++) {
      var l = this.lines[i];
      if (l.x) continue;
      if (!l.g && l.grp >= 0 && !this.groups[l.grp].open) continue;
      vis.push(i);
    }
    if (this.tail) vis.push(-1);
    this.visible = vis;
    this.spacer.style.height = vis.length * LINE_PX + 'px';
    this.paint();
  };

  Viewer.prototype.row = function (i) {
    var line = i === -1 ? this.tail : this.lines[i];
    var n = i === -1 ? this.lines.length + 1 : i + 1;
    var cls = 'ln';
    if (line.g) cls += ' ln-g' + (line.g === '~~~' ? ' ln-quiet' : '');
    if (i === this.target) cls += ' ln-target';
    if (this.hitSet && this.hitSet[i]) cls += this.hits[this.hit] === i ? ' ln-current' : ' ln-hit';
    // A header still being written (the tail) heads no section yet: the next read pushes it as one.
    var group = i === -1 ? null : this.groups[line.grp];
    var fold = group && line.g ? '<span class="ln-fold" aria-hidden="true">' + (group.open ? '\u25be' : '\u25b8') + '</span>' : '';
    return (
      '<div class="' +
      cls +
      '" data-i="' +
      i +
      '"><a class="ln-n" href="#' +
      this.jobId +
      '/L' +
      n +
      '">' +
      n +
      '</a><span class="ln-t">' +
      (line.t ? clock(line.t) : '') +
      '</span><span class="ln-c">' +
      fold +
      line.h +
      '</span></div>'
    );
  };

  /** Puts the lines in view (and a margin) in the DOM, nothing else. */
  Viewer.prototype.paint = function () {
    if (!this.started) return;
    var top = this.box.scrollTop;
    var height = this.box.clientHeight || 600;
    var first = Math.max(0, Math.floor(top / LINE_PX) - OVERSCAN);
    var last = Math.min(this.visible.length, Math.ceil((top + height) / LINE_PX) + OVERSCAN);
    var html = '';
    for (var k = first; k < last; k++) html += this.row(this.visible[k]);
    if (!this.visible.length) html = '<p class="muted">' + (this.finished ? 'No output.' : 'No output yet.') + '</p>';
    this.win.style.transform = 'translateY(' + first * LINE_PX + 'px)';
    this.win.innerHTML = html;
    // 256 colours and true colour come as data attributes (the CSP allows no style attributes).
    var coloured = this.win.querySelectorAll('[data-fg],[data-bg]');
    for (var c = 0; c < coloured.length; c++) {
      var el = coloured[c];
      var bg = HEX.test(el.dataset.bg || '') ? rgb(el.dataset.bg) : null;
      if (bg) el.style.backgroundColor = 'rgb(' + bg.join(', ') + ')';
      if (HEX.test(el.dataset.fg || '')) el.style.color = readable(rgb(el.dataset.fg), bg || LOG_BG);
    }
  };

  Viewer.prototype.toggle = function (i) {
    var g = this.lines[i] && this.groups[this.lines[i].grp];
    if (!g) return;
    g.open = !g.open;
    this.layout();
  };

  Viewer.prototype.atEnd = function () {
    return this.box.scrollTop + this.box.clientHeight >= this.box.scrollHeight - LINE_PX;
  };
  Viewer.prototype.scrollToRow = function (k) {
    this.programmatic = true;
    this.box.scrollTop = Math.max(0, k * LINE_PX);
    this.paint();
  };
  Viewer.prototype.scrollToEnd = function () {
    this.programmatic = true;
    this.box.scrollTop = this.box.scrollHeight;
    this.paint();
  };

  /** Shows line index `i`: opens its section, puts it a third down the view. */
  Viewer.prototype.reveal = function (i) {
    var line = this.lines[i];
    if (!line) return false;
    if (!line.g && line.grp >= 0 && !this.groups[line.grp].open) {
      this.groups[line.grp].open = true;
      this.layout();
    }
    var k = this.visible.indexOf(i);
    if (k < 0) return false;
    this.scrollToRow(k - Math.floor(this.box.clientHeight / LINE_PX / 3));
    if (this.followBox) this.followBox.checked = false;
    return true;
  };

  /** Scrolls to line number `n` (1-based) and marks it; waits for it while the log loads. */
  Viewer.prototype.goTo = function (n) {
    if (n > this.lines.length) {
      this.pendingLine = this.done ? 0 : n;
      return;
    }
    this.pendingLine = 0;
    this.target = n - 1;
    this.reveal(n - 1);
    this.paint();
  };

  Viewer.prototype.find = function (query, keep) {
    this.query = query;
    var q = query.toLowerCase();
    var hits = [];
    var set = {};
    if (q)
      for (var i = 0; i < this.lines.length; i++) {
        var l = this.lines[i];
        if (l.s === undefined) l.s = plain(l.h).toLowerCase();
        if (l.s.indexOf(q) >= 0) {
          hits.push(i);
          set[i] = true;
        }
      }
    var was = this.hits[this.hit];
    this.hits = hits;
    this.hitSet = set;
    this.hit = keep && was !== undefined ? Math.max(0, hits.indexOf(was)) : hits.length ? 0 : -1;
    if (!keep && this.hit >= 0) this.reveal(hits[this.hit]);
    this.showCount();
    this.paint();
  };

  Viewer.prototype.step = function (by) {
    if (!this.hits.length) return;
    this.hit = (this.hit + by + this.hits.length) % this.hits.length;
    this.reveal(this.hits[this.hit]);
    this.showCount();
    this.paint();
  };

  Viewer.prototype.showCount = function () {
    this.count.textContent = !this.query ? '' : this.hits.length ? this.hit + 1 + ' of ' + this.hits.length : 'No matches';
  };

  var byJob = {};
  function attach() {
    document.querySelectorAll('.log-viewer').forEach(function (root) {
      if (root.dataset.ready === '1') return;
      var v = new Viewer(root);
      byJob[v.jobId] = v;
    });
  }

  /** `#<job-id>` opens that job's log; `#<job-id>/L<n>` goes to its line n. */
  function followHash() {
    var m = /^#([0-9a-f-]{36})(?:\/L(\d+))?$/.exec(location.hash);
    if (!m) return;
    var v = byJob[m[1]];
    if (!v) return;
    if (v.panel && !v.panel.open) v.panel.open = true;
    v.start();
    if (m[2]) {
      v.goTo(Number(m[2]));
      requestAnimationFrame(function () {
        v.root.scrollIntoView({ block: 'start' });
      });
    }
  }

  attach();
  followHash();
  window.addEventListener('hashchange', followHash);
  // assets/build.js replaced the job list: new jobs' viewers start here (moved ones keep theirs).
  document.addEventListener('windsock:jobs', function () {
    attach();
  });
  // Used by the browser tests and assets/build.js.
  window.windsockLogs = byJob;
})();
