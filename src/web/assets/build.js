/* global document, window, location, EventSource, DOMParser, CustomEvent, setInterval */
// The build page, live without reloads. It listens to the page's server-sent events
// (`GET <build>/events`: `build`, `job`, `jobs`, `log`) and, where that stream is not there,
// asks `<build>/state` every few seconds: one request for the whole page, however many jobs.
// A state change updates the badges, agents and times in place; when the set of jobs or the
// buttons they need change, it fetches the page once more (at most every few seconds) and swaps
// the parts that change, keeping the open logs as they are (and an unblock form being filled in).
// New log bytes go to the log viewer (assets/log.js) as `log:grow`. Also: the tabs (meta-data,
// environment, artifacts, timeline), the timeline's bars and the running durations' clock.
(function () {
  'use strict';
  var page = document.querySelector('.build-page');
  if (!page) return;
  var POLL_MS = 5000;
  var REFRESH_GAP_MS = 3000;
  var LOG_GAP_MS = 1000;
  var status = page.querySelector('[data-live-status]');
  var count = Number(page.dataset.jobCount);
  var RUNNING = ['accepted', 'running'];
  var FAILED = ['failed', 'timed_out', 'expired'];
  var OPEN_CAP = 5;
  var FINISHED = [
    'passed',
    'failed',
    'canceled',
    'skipped',
    'not_run',
    'timed_out',
    'expired',
    'broken',
    'waiting_failed',
    'blocked_failed',
    'unblocked_failed',
  ];

  var edited = false;
  document.addEventListener('input', function (e) {
    if (e.target.closest && e.target.closest('form.unblock')) edited = true;
  });

  // ---- durations and the timeline ----
  function span(ms) {
    var s = Math.max(0, Math.round(ms / 1000));
    var h = Math.floor(s / 3600);
    var m = Math.floor((s % 3600) / 60);
    s %= 60;
    return h ? h + 'h ' + m + 'm' : m ? m + 'm ' + s + 's' : s + 's';
  }
  function tick() {
    var now = Date.now();
    page.querySelectorAll('[data-job-duration],[data-build-duration]').forEach(function (el) {
      var started = el.dataset.started;
      if (!started) return;
      var end = el.dataset.finished ? Date.parse(el.dataset.finished) : now;
      var text = span(end - Date.parse(started));
      if (el.textContent.trim() !== text) el.textContent = text;
    });
  }
  function drawTimeline() {
    var t = page.querySelector('.timeline[data-build-started]');
    if (!t) return;
    var now = (Date.now() - Date.parse(t.dataset.buildStarted)) / 1000;
    var bars = t.querySelectorAll('.timeline-bar');
    var total = 1;
    bars.forEach(function (b) {
      total = Math.max(total, b.dataset.to === '' ? now : Number(b.dataset.to));
    });
    bars.forEach(function (b) {
      var from = Number(b.dataset.from);
      var to = b.dataset.to === '' ? now : Number(b.dataset.to);
      b.style.left = (100 * from) / total + '%';
      b.style.width = (100 * Math.max(0, to - from)) / total + '%';
    });
  }
  setInterval(function () {
    tick();
    drawTimeline();
  }, 1000);
  drawTimeline();

  // ---- tabs ----
  function tabs(root) {
    var panels = root.querySelectorAll('.tab-panel');
    if (!panels.length) return;
    var list = document.createElement('div');
    list.className = 'tab-list';
    list.setAttribute('role', 'tablist');
    list.setAttribute('aria-label', 'Build details');
    var buttons = [];
    panels.forEach(function (p, i) {
      var b = document.createElement('button');
      b.type = 'button';
      b.id = p.id + '-tab';
      b.textContent = p.querySelector('h2').textContent;
      b.setAttribute('role', 'tab');
      b.setAttribute('aria-controls', p.id);
      p.setAttribute('role', 'tabpanel');
      p.setAttribute('aria-labelledby', b.id);
      p.setAttribute('tabindex', '0');
      b.addEventListener('click', function () {
        select(i);
      });
      b.addEventListener('keydown', function (e) {
        if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
          var j = (i + (e.key === 'ArrowRight' ? 1 : panels.length - 1)) % panels.length;
          select(j);
          buttons[j].focus();
        }
      });
      buttons.push(b);
      list.appendChild(b);
    });
    function select(k) {
      buttons.forEach(function (b, i) {
        b.setAttribute('aria-selected', i === k ? 'true' : 'false');
        b.tabIndex = i === k ? 0 : -1;
        panels[i].hidden = i !== k;
      });
    }
    root.insertBefore(list, root.firstChild);
    root.classList.add('tabs-on');
    var wanted = 0;
    panels.forEach(function (p, i) {
      if (location.hash === '#' + p.id) wanted = i;
    });
    select(wanted);
  }
  page.querySelectorAll('[data-tabs]').forEach(tabs);

  // ---- live state ----
  var refreshTimer = 0;
  var lastRefresh = 0;
  function scheduleRefresh() {
    if (refreshTimer) return;
    refreshTimer = window.setTimeout(refresh, Math.max(0, lastRefresh + REFRESH_GAP_MS - Date.now()));
  }

  /** Fetches the page again and swaps its live regions, keeping the logs that are open. */
  function refresh() {
    lastRefresh = Date.now();
    fetch(location.pathname, { headers: { Accept: 'text/html' }, credentials: 'same-origin' })
      .then(function (r) {
        if (!r.ok) throw new Error('HTTP ' + r.status);
        return r.text();
      })
      .then(function (text) {
        refreshTimer = 0;
        var fresh = new DOMParser().parseFromString(text, 'text/html');
        var next = fresh.querySelector('.build-page');
        if (!next) return;
        // Moving a kept log takes it out of the page for a moment, which takes the focus from
        // what has it there (its search box, being typed in): keys pressed next would go nowhere.
        var focused = document.activeElement;
        var selection = focused && focused.matches('input[type="search"]') ? [focused.selectionStart, focused.selectionEnd, focused.selectionDirection] : null;
        fresh.querySelectorAll('[data-region]').forEach(function (found) {
          var name = found.dataset.region;
          var old = page.querySelector('[data-region="' + name + '"]');
          if (!old) return;
          // Adopted first: the logs kept below are moved into it, never copied (a copy would lose its viewer).
          var region = document.importNode(found, true);
          if (name === 'jobs') {
            // A form being filled in stays; so do the logs the viewer has started.
            if (edited && old.querySelector('form.unblock')) return scheduleRefresh();
            old.querySelectorAll('.log-viewer[data-started="1"]').forEach(function (viewer) {
              var match = region.querySelector('.log-viewer[data-job-id="' + viewer.dataset.jobId + '"]');
              if (!match) return;
              var details = match.closest('details.job-log');
              var keep = viewer.closest('details.job-log');
              if (details && keep) details.replaceWith(keep);
            });
          }
          old.replaceWith(region);
        });
        // So it gets the focus back, where it is kept, with the text it had selected.
        if (focused && focused !== document.activeElement && focused.isConnected) {
          focused.focus({ preventScroll: true });
          if (selection) focused.setSelectionRange(selection[0], selection[1], selection[2]);
        }
        count = Number(next.dataset.jobCount);
        document.dispatchEvent(new CustomEvent('windsock:jobs'));
        tick();
        drawTimeline();
      })
      .catch(function () {
        refreshTimer = 0;
      });
  }

  function applyBuild(b) {
    var badge = page.querySelector('[data-build-badge]');
    if (badge && badge.dataset.state !== b.state + '/' + b.blocked) {
      badge.dataset.state = b.state + '/' + b.blocked;
      // The event's badge is the page's own (a build waiting on a block step reads Blocked).
      badge.innerHTML = b.badge;
      scheduleRefresh();
    }
    var d = page.querySelector('[data-build-duration]');
    if (d) {
      d.dataset.started = b.started_at || '';
      d.dataset.finished = b.finished_at || '';
    }
  }

  function applyJob(j) {
    var li = document.getElementById(j.id);
    if (!li || !li.dataset.jobId) {
      // A job the page does not show as a row (a new one, or a retried attempt): fetch the list.
      if (!li) scheduleRefresh();
      return;
    }
    var d = li.querySelector('[data-job-duration]');
    if (d) {
      d.dataset.started = j.started_at || '';
      d.dataset.finished = j.finished_at || '';
    }
    if (li.dataset.state === j.state) return;
    var was = li.dataset.state;
    li.dataset.state = j.state;
    var badge = li.querySelector('[data-job-badge]');
    if (badge) badge.innerHTML = j.badge;
    var node = page.querySelector('[data-node="' + j.id + '"] .state');
    if (node) node.outerHTML = j.badge;
    var agent = li.querySelector('[data-job-agent]');
    if (agent && j.agent_name && !agent.textContent.trim()) agent.textContent = j.agent_name;
    var exit = li.querySelector('[data-job-exit]');
    if (exit && j.exit_status !== null && j.exit_status !== undefined) exit.textContent = 'exit ' + j.exit_status;
    var panel = li.querySelector(':scope > details.job-log');
    if (FINISHED.indexOf(j.state) >= 0) {
      var viewer = panel && panel.querySelector('.log-viewer');
      if (viewer) viewer.dispatchEvent(new CustomEvent('log:finished'));
    }
    // A job that starts running, or fails, opens its log as the page would have (failed ones
    // whatever the cap), unless the reader closed it.
    var failed = FAILED.indexOf(j.state) >= 0;
    if (panel && !panel.open && panel.dataset.closed !== '1' && (failed || (RUNNING.indexOf(j.state) >= 0 && openLogs() < OPEN_CAP))) panel.open = true;
    // Buttons (retry, unblock) and the graph follow the new state: one fetch of the page soon.
    if (was !== undefined) scheduleRefresh();
  }

  function openLogs() {
    return page.querySelectorAll('ol.jobs > li.job > details.job-log[open]').length;
  }
  // A log the reader closes stays closed when its job changes state.
  page.addEventListener('click', function (e) {
    var summary = e.target.closest && e.target.closest('details.job-log > summary');
    if (summary && summary.parentNode.open) summary.parentNode.dataset.closed = '1';
  });

  var lastGrow = {};
  var growTimers = {};
  function grow(jobId) {
    var logs = window.windsockLogs || {};
    var v = logs[jobId];
    if (!v || !v.started) return;
    var wait = (lastGrow[jobId] || 0) + LOG_GAP_MS - Date.now();
    if (wait > 0) {
      if (!growTimers[jobId])
        growTimers[jobId] = window.setTimeout(function () {
          growTimers[jobId] = 0;
          grow(jobId);
        }, wait);
      return;
    }
    lastGrow[jobId] = Date.now();
    v.root.dispatchEvent(new CustomEvent('log:grow'));
  }

  function parse(e) {
    try {
      return JSON.parse(e.data);
    } catch {
      return null;
    }
  }

  var polling = 0;
  function poll() {
    if (document.visibilityState === 'hidden') {
      polling = window.setTimeout(poll, POLL_MS);
      return;
    }
    fetch(page.dataset.stateUrl, { headers: { Accept: 'application/json' }, credentials: 'same-origin' })
      .then(function (r) {
        if (!r.ok) throw new Error('HTTP ' + r.status);
        return r.json();
      })
      .then(function (s) {
        applyBuild(s.build);
        s.jobs.forEach(applyJob);
        if (s.count !== count) scheduleRefresh();
        if (status) status.textContent = '';
        // A finished build changes no more: stop asking.
        if (s.build.finished_at) return;
        polling = window.setTimeout(poll, POLL_MS);
      })
      .catch(function () {
        if (status) status.textContent = 'Not updating: the server could not be reached. Retrying…';
        polling = window.setTimeout(poll, POLL_MS * 2);
      });
  }

  function listen() {
    if (typeof EventSource === 'undefined' || !page.dataset.eventsUrl) return poll();
    var opened = false;
    var source = new EventSource(page.dataset.eventsUrl);
    source.onopen = function () {
      opened = true;
      document.documentElement.dataset.live = 'stream';
      window.clearTimeout(polling);
      if (status) status.textContent = '';
    };
    source.onerror = function () {
      document.documentElement.dataset.live = '';
      if (!opened || source.readyState === EventSource.CLOSED) {
        // No stream here (an older server, a proxy that buffers): poll instead.
        source.close();
        poll();
      }
    };
    source.addEventListener('build', function (e) {
      var b = parse(e);
      if (b) applyBuild(b);
    });
    source.addEventListener('job', function (e) {
      var j = parse(e);
      if (j) applyJob(j);
    });
    source.addEventListener('jobs', function (e) {
      var c = parse(e);
      if (c && c.count !== count) scheduleRefresh();
    });
    source.addEventListener('log', function (e) {
      var l = parse(e);
      if (l && l.job_id) grow(l.job_id);
    });
  }
  listen();
})();
