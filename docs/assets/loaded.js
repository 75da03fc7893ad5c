// For tests/test_report_browser.py: once the page has loaded, record on <body> how many images it has,
// how many loaded and how many tables it shows, so that a headless browser's --dump-dom can tell.
window.addEventListener('load', function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) {
    if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++;
  }
  document.body.setAttribute('data-images-expected', imgs.length);
  document.body.setAttribute('data-images-loaded', ok);
  document.body.setAttribute('data-tables-found', document.querySelectorAll('table').length);
});
