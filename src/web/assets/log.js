/* global document, location, history */
// Loads each job's log when its panel opens (and the one the URL's #job-id names), tails the
// logs of jobs still running by polling the page's log endpoint, and reloads the page when one
// of them finishes (keeping that job's log open). The HTML it inserts is rendered by the server
// with every character of the log escaped.
(function () {
  'use strict';
  var POLL_MS = 1500;
  var edited = false;
  document.addEventListener('input', function () {
    edited = true;
  });

  function load(panel) {
    var box = panel.querySelector('.log');
    if (!box || box.dataset.loading === '1') return;
    box.dataset.loading = '1';
    var url = box.dataset.logUrl + (box.dataset.size ? '?size=' + encodeURIComponent(box.dataset.size) : '');
    fetch(url, { headers: { Accept: 'application/json' }, credentials: 'same-origin' })
      .then(function (r) {
        if (!r.ok) throw new Error('HTTP ' + r.status);
        return r.json();
      })
      .then(function (log) {
        if (!log.unchanged) {
          var open = [];
          box.querySelectorAll('details.log-group').forEach(function (d, i) {
            open[i] = d.open;
          });
          box.innerHTML = log.html || '<p class="muted">No output yet.</p>';
          box.querySelectorAll('details.log-group').forEach(function (d, i) {
            if (open[i] !== undefined) d.open = open[i];
          });
          box.dataset.size = String(log.size);
        }
        box.setAttribute('aria-busy', log.finished ? 'false' : 'true');
        box.dataset.loading = '';
        if (!log.finished && panel.open)
          setTimeout(function () {
            load(panel);
          }, POLL_MS);
        else if (log.finished && box.dataset.running === '1') {
          // The job ended while watched: the page's states and buttons are stale now. Reload it,
          // unless the reader has started filling in a form (an unblock step's fields).
          box.dataset.running = '';
          var status = document.querySelector('[data-live-status]');
          var job = box.closest('li[id]');
          if (!edited)
            setTimeout(function () {
              if (job) history.replaceState(null, '', '#' + job.id);
              location.reload();
            }, 500);
          else if (status) status.textContent = 'A job finished: reload the page to see the build\u2019s new state.';
        }
      })
      .catch(function (e) {
        box.dataset.loading = '';
        box.textContent = 'The log could not be loaded (' + e.message + ').';
      });
  }

  document.querySelectorAll('details.job-log').forEach(function (panel) {
    panel.addEventListener('toggle', function () {
      if (panel.open) load(panel);
    });
    if (panel.open) load(panel);
  });
  var id = decodeURIComponent(location.hash.slice(1));
  if (id) {
    var job = document.getElementById(id);
    var panel = job && job.querySelector('details.job-log');
    if (panel) panel.open = true;
  }
})();
