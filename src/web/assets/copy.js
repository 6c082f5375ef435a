/* global document, navigator, Element */
// Copy buttons: a button with data-copy="<id>" copies that field's value (the badge's Markdown).
// Without the clipboard API the field is selected, for the reader to copy.
'use strict';
document.addEventListener('click', function (event) {
  var button = event.target instanceof Element ? event.target.closest('button[data-copy]') : null;
  if (!button) return;
  var field = document.getElementById(button.getAttribute('data-copy'));
  if (!field) return;
  field.select();
  var done = function () {
    button.textContent = 'Copied';
  };
  if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(field.value).then(done, function () {});
});
