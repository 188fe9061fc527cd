// The runs page's live events. The page lists the events it had when it
// was rendered; this opens an EventSource on the run's stream (same
// origin, the session cookie authenticates it), appends each new event as
// a row, and reloads the page when the run pauses or ends so the reply
// box, the artifacts and the final state are rendered by the server.
// Agent text only ever reaches the page through textContent.
(function () {
  'use strict';
  var table = document.getElementById('events');
  var src = table && table.getAttribute('data-stream');
  if (!src || !window.EventSource) {
    return;
  }
  var body = table.tBodies[0];
  var badge = document.getElementById('status');
  var live = document.getElementById('live');
  var shown = badge ? badge.textContent.trim() : '';
  var last = parseInt(table.getAttribute('data-after'), 10) || 0;
  var MAX = 2000; // the server cuts a row's text at the same length

  function say(state, text) {
    table.setAttribute('data-live', state);
    if (live) {
      live.textContent = text;
    }
  }

  function cut(s) {
    var chars = Array.from(s);
    return chars.length <= MAX ? s : chars.slice(0, MAX).join('') + '\u2026';
  }

  // summary says what the server's rows say: content, message, the
  // artifact it carries, or status (with its reason), else the payload
  // as JSON.
  function summary(p) {
    if (p && typeof p === 'object' && !Array.isArray(p)) {
      if (typeof p.content === 'string' && p.content !== '') {
        return cut(p.content);
      }
      if (typeof p.message === 'string' && p.message !== '') {
        return cut(p.message);
      }
      if (typeof p.artifact_id === 'string' && p.artifact_id !== '') {
        var text = (Array.isArray(p.parts) ? p.parts : []).map(function (part) {
          return part && typeof part.text === 'string' ? part.text : '';
        }).join('');
        var label = typeof p.name === 'string' && p.name !== '' ? p.name : p.artifact_id;
        return cut('artifact ' + label + (text !== '' ? ': ' + text : ''));
      }
      if (typeof p.status === 'string' && p.status !== '') {
        return cut(p.status + (typeof p.reason === 'string' && p.reason !== '' ? ': ' + p.reason : ''));
      }
    }
    return cut(JSON.stringify(p, null, 2));
  }

  function typeClass(t) {
    return 't-' + String(t).replace(/[^a-z0-9]/g, '-');
  }

  function cell(tr, cls, text, code) {
    var td = document.createElement('td');
    if (cls) {
      td.className = cls;
    }
    if (code) {
      var c = document.createElement('code');
      c.textContent = text;
      td.appendChild(c);
    } else {
      td.textContent = text;
    }
    tr.appendChild(td);
  }

  function stamp(ms) {
    var d = new Date(ms);
    return isNaN(d.getTime()) ? '\u2014' : d.toISOString();
  }

  function append(f) {
    var tr = document.createElement('tr');
    tr.setAttribute('data-seq', String(f.sequence));
    tr.className = typeClass(f.type) + ' fresh';
    cell(tr, 'seq', String(f.sequence));
    cell(tr, 'when', stamp(f.timestamp));
    cell(tr, '', String(f.type), true);
    cell(tr, 'what', summary(f.payload));
    body.appendChild(tr);
  }

  function settled(st) {
    return st === 'WAITING_USER' || st === 'COMPLETED' || st === 'FAILED' || st === 'CANCELLED';
  }

  var es = new EventSource(src);
  say('connecting', 'connecting\u2026');
  // A form being sent (cancel, reply, sign out) navigates away: the
  // stream must not reload the page under it.
  var leaving = false;
  document.addEventListener('submit', function () {
    leaving = true;
    es.close();
  });
  es.onopen = function () {
    say('on', 'live');
  };
  es.addEventListener('message', function (m) {
    if (leaving) {
      return;
    }
    var f;
    try {
      f = JSON.parse(m.data);
    } catch (e) {
      return;
    }
    if (typeof f.sequence !== 'number' || f.sequence <= last) {
      return; // already shown
    }
    last = f.sequence;
    append(f);
    var p = f.payload || {};
    if (f.type === 'status' && typeof p.status === 'string' && p.status !== shown) {
      shown = p.status;
      if (badge) {
        badge.textContent = p.status;
        badge.className = 'status ' + p.status.toLowerCase();
      }
      if (settled(p.status)) {
        // The page renders what a pause or an ending brings (the reply
        // box, the artifacts); the events that follow in the same
        // commit are on it.
        es.close();
        say('off', 'reloading\u2026');
        window.location.reload();
      }
    }
    if (f.type === 'done' || f.type === 'error') {
      es.close();
      say('off', 'the run has ended');
    }
  });
  es.onerror = function () {
    if (leaving) {
      return;
    }
    if (es.readyState === EventSource.CLOSED) {
      say('off', 'disconnected: reload the page');
    } else {
      say('connecting', 'reconnecting\u2026');
    }
  };
})();
