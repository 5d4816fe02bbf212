/**
 * The playground (/playground): the `script` lesson's page with starting programs to pick from. The
 * page itself is lesson-page.js (its form shows the program in an editor); this only fills the editor,
 * the file name and a world size from the chosen example, and lets Tab indent in the editor.
 */

const examples = JSON.parse(document.getElementById("examples").textContent);
const picker = document.getElementById("example");
const form = document.getElementById("run-form");

function field(name) {
  return form.elements.namedItem(name);
}

picker.addEventListener("change", () => {
  const example = examples.find((e) => e.id === picker.value);
  if (!example || !field("source")) return;
  field("source").value = example.source;
  field("filename").value = example.filename;
  form.dispatchEvent(new Event("change", { bubbles: true }));
});

// Tab indents (four spaces) in the editor; Escape then Tab leaves it, as in other code editors on the web.
let escaped = false;
form.addEventListener("keydown", (event) => {
  const editor = event.target;
  if (!(editor instanceof HTMLTextAreaElement) || !editor.classList.contains("code-editor")) return;
  if (event.key === "Escape") {
    escaped = true;
    return;
  }
  if (event.key === "Tab" && !event.shiftKey && !escaped) {
    event.preventDefault();
    editor.setRangeText("    ", editor.selectionStart, editor.selectionEnd, "end");
  }
  escaped = false;
});
