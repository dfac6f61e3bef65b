// Upload page: drag and drop, several files, upload progress; then the job page shows import progress.
(function () {
  "use strict";
  var form = document.getElementById("upload-form");
  if (!form) return;
  var input = document.getElementById("files");
  var zone = document.getElementById("dropzone");
  var chosen = document.getElementById("chosen");
  var bar = document.getElementById("upload-bar");
  var barBox = document.getElementById("upload-progress");
  var status = document.getElementById("upload-status");
  var dropped = null;

  function files() { return dropped || input.files; }

  function list() {
    chosen.textContent = "";
    Array.prototype.forEach.call(files(), function (f) {
      var li = document.createElement("li");
      li.textContent = f.name + " (" + (f.size / 1e6).toFixed(1) + " MB)";
      chosen.appendChild(li);
    });
  }

  input.addEventListener("change", function () { dropped = null; list(); });
  ["dragenter", "dragover"].forEach(function (name) {
    zone.addEventListener(name, function (e) { e.preventDefault(); zone.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (name) {
    zone.addEventListener(name, function (e) { e.preventDefault(); zone.classList.remove("over"); });
  });
  zone.addEventListener("drop", function (e) {
    if (e.dataTransfer && e.dataTransfer.files.length) { dropped = e.dataTransfer.files; list(); }
  });

  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var data = new FormData(form);
    data.delete("files");
    Array.prototype.forEach.call(files(), function (f) { data.append("files", f, f.name); });
    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    barBox.hidden = false;
    xhr.upload.addEventListener("progress", function (ev) {
      if (!ev.lengthComputable) return;
      var pct = Math.round(ev.loaded / ev.total * 100);
      bar.style.width = pct + "%";
      status.textContent = "Uploading… " + pct + " %";
    });
    xhr.addEventListener("load", function () {
      if (xhr.status >= 200 && xhr.status < 300 && xhr.responseURL && xhr.responseURL.indexOf("/jobs/") !== -1) {
        status.textContent = "Uploaded. Importing…";
        window.location.assign(xhr.responseURL);
        return;
      }
      var type = xhr.getResponseHeader("Content-Type") || "";
      var message = "The upload failed (HTTP " + xhr.status + ").";
      if (type.indexOf("text/plain") === 0 && xhr.responseText) {
        message = xhr.responseText;
      } else if (type.indexOf("text/html") === 0) {
        var err = new DOMParser().parseFromString(xhr.responseText, "text/html").getElementById("upload-error");
        if (err) message = err.textContent;
      }
      status.textContent = message;
      status.className = "error";
    });
    xhr.addEventListener("error", function () {
      status.textContent = "The upload failed: the server could not be reached.";
      status.className = "error";
    });
    xhr.send(data);
  });
})();
