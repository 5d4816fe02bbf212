/**
 * The run form, generated from the lesson's JSON schema: enums become selects, integers number inputs
 * with their bounds, descriptions help text; plus the world size (the lesson's sizes up to the
 * server's limit). A 422's errors are shown next to the field its `loc` names.
 */

import { fill, h } from "paralab/dom.js";
import { lessonField, t, tMessage, tPlural } from "paralab/i18n.js";
import { inline } from "paralab/markdown.js";

function resolve(schema, prop) {
  if (prop.$ref) return { ...schema.$defs?.[prop.$ref.split("/").pop()], ...prop };
  if (prop.allOf?.length === 1) return { ...resolve(schema, prop.allOf[0]), ...prop };
  if (prop.anyOf) return { ...resolve(schema, prop.anyOf.find((p) => p.type !== "null") || {}), ...prop };
  return prop;
}

/** A boolean from a parameter's value as it may arrive: true/false, or "true"/"false"/"1"/"0" from an
 * address or a room's link (where `Boolean("false")` would read as true). */
export function asBoolean(value) {
  if (typeof value === "string") return !["", "false", "0", "off", "no"].includes(value.trim().toLowerCase());
  return Boolean(value);
}

/** A select's options in labelled groups when the schema says so ("x-enum-groups": {label: [values]},
 *  the values of no group under "x-enum-rest"): pp's `gpipe` (paralab's engine) and `GPipe` (torch's)
 *  must not read as twins. Null for a plain enum. */
function enumGroups(prop) {
  const named = prop["x-enum-groups"];
  if (!named) return null;
  const grouped = new Set(Object.values(named).flat());
  const groups = Object.entries(named).map(([label, values]) => [label, values.filter((v) => prop.enum.includes(v))]);
  const rest = prop.enum.filter((v) => !grouped.has(v));
  if (rest.length) groups.push([prop["x-enum-rest"] || "other", rest]);
  return groups.filter(([, values]) => values.length);
}

function control(name, prop, value) {
  const id = `param-${name}`;
  const common = { id, name, "aria-describedby": `help-${name} error-${name}` };
  if (prop.enum) {
    const option = (v) => h("option", { value: String(v), selected: String(v) === String(value) }, String(v));
    const groups = enumGroups(prop);
    return h("select", common, groups ? groups.map(([label, values]) => h("optgroup", { label: t(label) }, values.map(option)))
      : prop.enum.map(option));
  }
  if (prop.type === "integer" || prop.type === "number") {
    return h("input", { ...common, type: "number", inputmode: "numeric", value: value ?? "", required: true,
                        min: prop.minimum ?? (prop.exclusiveMinimum !== undefined ? prop.exclusiveMinimum + 1 : null),
                        max: prop.maximum ?? (prop.exclusiveMaximum !== undefined ? prop.exclusiveMaximum - 1 : null),
                        step: prop.type === "integer" ? 1 : "any" });
  }
  if (prop.type === "boolean") return h("input", { ...common, type: "checkbox", checked: asBoolean(value) });
  if (prop.format === "python") {   // a program (the `script` lesson): an editor, not a line
    const editor = h("textarea", { ...common, class: "code-editor", rows: 18, spellcheck: "false", autocomplete: "off",
                                   autocapitalize: "off", wrap: "off" });
    editor.value = value ?? "";
    return editor;
  }
  if (prop.type === "array") {
    return h("input", { ...common, type: "text", value: Array.isArray(value) ? value.join(" ") : value ?? "", placeholder: "--flag value" });
  }
  return h("input", { ...common, type: "text", value: value ?? "" });
}

/** A program's text and its arguments stay out of the address bar, both ways (too long to share so). */
function isUnlinked(prop) {
  return prop.format === "python" || prop.type === "array";
}

/** A parameter's name as written in code, in no other language ("microbatches" is a word of the
 * interface's too), a line break allowed after each underscore (reshard_after_forward). */
function identifier(name) {
  return name.split(/(?<=_)/).flatMap((part, i) => [i ? h("wbr", {}) : null, document.createTextNode(part)]);
}

/** A parameter's help in the current language (the lesson's texts.<lang>.json `params`), else its
 * description; its `code` spans drawn as code. */
function paramHelp(name, prop) {
  const help = h("p", { class: "help", id: `help-${name}` });
  help.innerHTML = inline(lessonField(`params.${name}`, prop.description || prop.title || ""));
  return help;
}

/** The parameters' help again, in the language just chosen. */
export function translateParamHelp(form, lesson) {
  const schema = lesson.params;
  for (const [name, prop] of Object.entries(schema.properties || {})) {
    form.querySelector(`#help-${CSS.escape(name)}`)?.replaceWith(paramHelp(name, resolve(schema, prop)));
  }
}

/** Fill `form` with the lesson's fields. `values`: {world_size, params} to start from (e.g. the URL). */
export function buildParamsForm(form, lesson, { maxRanks, values = {} }) {
  const schema = lesson.params;
  const fields = form.querySelector(".param-fields");
  const props = Object.entries(schema.properties || {}).map(([name, prop]) => [name, resolve(schema, prop)]);
  const unlinked = new Set(props.filter(([, p]) => isUnlinked(p)).map(([n]) => n));
  const sizes = lesson.world_sizes.filter((n) => n <= maxRanks);
  const current = [Number(values.world_size), lesson.default_world_size, 2].find((n) => sizes.includes(n)) ?? sizes[0];
  const defaultOf = (name, prop, size) => lesson.defaults_by_world_size?.[size]?.[name] ?? prop.default;
  fill(fields, props.map(([name, prop]) => {
    const value = (unlinked.has(name) ? undefined : values.params?.[name]) ?? defaultOf(name, prop, current);   // not from an address
    return h("div", { class: "field", "data-field": name },
      h("label", { for: `param-${name}`, translate: "no" }, identifier(name)),
      control(name, prop, value),
      paramHelp(name, prop),
      h("p", { class: "field-error", id: `error-${name}`, role: "alert", hidden: true }));
  }));
  form.dataset.types = JSON.stringify(Object.fromEntries(props.map(([n, p]) => [n, p.type || (p.enum ? "enum" : "string")])));
  form.dataset.unlinked = JSON.stringify([...unlinked]);

  const options = form.querySelector(".world-size-options");
  fill(options, sizes.map((n) =>
    h("label", { class: "segment" },
      h("input", { type: "radio", name: "world_size", value: n, checked: n === current, "aria-describedby": "error-world_size" }),
      h("span", {}, String(n)))));
  // A field the viewer has not typed into follows its default for the number of ranks chosen (3D's grid).
  fields.oninput = fields.onchange = (event) => event.target.closest?.(".field")?.setAttribute("data-edited", "");
  options.onchange = () => {
    const size = Number(form.querySelector('input[name="world_size"]:checked')?.value);
    const untouched = props.filter(([name]) => !fields.querySelector(`[data-field="${CSS.escape(name)}"]`)?.hasAttribute("data-edited"));
    writeParamsForm(form, { world_size: size, params: Object.fromEntries(untouched
      .filter(([name]) => Object.values(lesson.defaults_by_world_size || {}).some((d) => name in d))
      .map(([name, prop]) => [name, defaultOf(name, prop, size)])) });
  };
}

/** {world_size, params} as typed values. */
export function readParamsForm(form) {
  const types = JSON.parse(form.dataset.types || "{}");
  const params = {};
  for (const [name, type] of Object.entries(types)) {
    const input = form.elements.namedItem(name);
    if (!input) continue;
    if (type === "boolean") params[name] = input.checked;
    else if (type === "integer" || type === "number") params[name] = input.value === "" ? null : Number(input.value);
    else if (type === "array") params[name] = input.value.split(/\s+/).filter(Boolean);
    else params[name] = input.value;
  }
  const size = form.querySelector('input[name="world_size"]:checked');
  return { world_size: size ? Number(size.value) : null, params };
}

/** Set fields from {world_size, params} (e.g. the run being shown). */
export function writeParamsForm(form, { world_size, params = {} }) {
  for (const [name, value] of Object.entries(params)) {
    const input = form.elements.namedItem(name);
    if (!input || input instanceof RadioNodeList) continue;
    if (input.type === "checkbox") input.checked = asBoolean(value);
    else input.value = Array.isArray(value) ? value.join(" ") : String(value);
  }
  const radio = form.querySelector(`input[name="world_size"][value="${Number(world_size)}"]`);
  if (radio) radio.checked = true;
}

/** The parameters that belong in the address bar: not a program's text, nor its arguments. */
export function linkableParams(form, params) {
  const unlinked = new Set(JSON.parse(form.dataset.unlinked || "[]"));
  return Object.fromEntries(Object.entries(params || {}).filter(([name]) => !unlinked.has(name)));
}

/** "4 ranks · seq_len 8 · ffn 64 · …": the parameters in one line, for the folded form. */
export function summarizeParams(form) {
  const { world_size, params } = readParamsForm(form);
  return [tPlural(world_size, "{n} rank", "{n} ranks"),
    ...Object.entries(linkableParams(form, params)).map(([k, v]) => `${k} ${v === null ? t("default") : v}`)].join(" · ");
}

/** Fold the fields away (a run is on screen) or show them (choosing, or fixing an error). */
export function setExpanded(form, expanded) {
  const toggle = form.querySelector(".params-toggle");
  toggle.setAttribute("aria-expanded", String(expanded));
  form.querySelector(".form-row").hidden = !expanded;
  form.querySelector(".params-summary").textContent = summarizeParams(form);
}

/** The fold button, and the one-line summary kept up to date. */
export function bindParamsToggle(form) {
  const toggle = form.querySelector(".params-toggle");
  toggle.addEventListener("click", () => setExpanded(form, toggle.getAttribute("aria-expanded") !== "true"));
  const update = () => {
    form.querySelector(".params-summary").textContent = summarizeParams(form);
  };
  form.addEventListener("input", update);
  form.addEventListener("change", update);
}

export function clearErrors(form) {
  for (const p of form.querySelectorAll(".field-error, .form-error")) {
    p.hidden = true;
    p.textContent = "";
  }
  for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
  for (const el of form.querySelectorAll(".field.invalid")) el.classList.remove("invalid");
}

/** Show a 422's `detail` ([{loc, msg, type, params}]), a refusal ({detail, code, params}) or a sentence
 *  next to the fields it names, each in the current language. */
export function showErrors(form, detail) {
  clearErrors(form);
  const errors = Array.isArray(detail) ? detail : [detail && typeof detail === "object" ? { loc: [], ...detail } : { loc: [], msg: String(detail) }];
  for (const err of errors) {
    const name = err.loc?.length ? String(err.loc[err.loc.length - 1]) : "";
    const field = name && form.querySelector(`[data-field="${CSS.escape(name)}"]`);
    const target = field ? field.querySelector(".field-error") : form.querySelector(".form-error");
    const msg = err.msg || err.detail || err.error ? tMessage(err) : t("invalid");
    target.textContent = target.textContent ? `${target.textContent} ${msg}` : msg;
    target.hidden = false;
    if (field) {
      field.classList.add("invalid");
      for (const input of field.querySelectorAll("input, select, textarea")) input.setAttribute("aria-invalid", "true");
    }
  }
  setExpanded(form, true);
  const first = form.querySelector(".field.invalid input, .field.invalid select, .field.invalid textarea");
  if (first) first.focus();
  else form.querySelector(".form-error:not([hidden])")?.scrollIntoView({ block: "center" });   // below a long editor, say
}
