// Progressive enhancement only: the form works without it. It keeps a second click from sending
// the payment again while the first is on its way, and says that the payment is being processed.
(function () {
  'use strict';
  var form = document.getElementById('payment-form');
  if (!form) return;
  var summary = document.getElementById('error-summary');
  if (summary) summary.focus();
  var sending = false;
  form.addEventListener('submit', function (event) {
    if (sending) {
      event.preventDefault();
      return;
    }
    sending = true;
    var button = document.getElementById('pay');
    var progress = document.getElementById('progress');
    button.setAttribute('aria-disabled', 'true');
    button.classList.add('busy');
    progress.textContent = 'Processing your payment… please keep this page open.';
  });
})();
