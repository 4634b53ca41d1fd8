// The credential page's copy buttons (CSP: scripts from this origin only, none inline).
document.addEventListener('click', async (event) => {
  const button = event.target.closest('button.copy');
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  const status = document.getElementById('copy-status');
  try {
    await navigator.clipboard.writeText(source.textContent.trim());
    status.textContent = 'Copied.';
  } catch {
    // No clipboard (an insecure origin, a refusal): select the text so it can be copied by hand.
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    status.textContent = 'Selected: press Ctrl+C (or Cmd+C) to copy.';
  }
});
