// The accessibility check: axe-core in headless Chromium over every HTML page of a built site.
//
//     node tools/a11y.mjs [--jobs N] [--json FILE] [FOLDER or PAGE ...]    (default: _build/html; make a11y)
//
// Every page is opened from disk in one browser session (the system's Chromium: $CHROMIUM, else
// /usr/bin/chromium; puppeteer-core drives it and downloads no browser), at 1280 px, after its scripts and
// MathJax have run; axe-core (package.json pins it) checks it against WCAG 2.0 and 2.1, levels A and AA.
// A page's Content-Security-Policy is bypassed for axe's script alone (a feedback page runs only its own).
// Not checked: what is under _static/ and _sources/ (no pages of the book), a page that only redirects
// (jupyter-book's index.html), and, unless --all, the source listings under _modules/ but their index and
// the first one: some 80 pages of one template (sphinx.ext.viewcode's) over the package's code, which would
// more than double the time (--all checks them: they pass too).
//
// One line per failing element: page, rule, impact, what the rule asks, the element (its CSS path and its
// HTML); then a count per rule. Exit status 1 on any violation, 2 when there is no page to check.
// --jobs N checks N pages at once (default: the cores, at most 4); --json FILE writes every violation as JSON.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import process from "node:process";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

import puppeteer from "puppeteer-core";

const require = createRequire(import.meta.url);
const axe = require("axe-core");

export const TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"];
export const WIDTH = 1280;
const SKIP = new Set(["_static", "_sources"]);
const REDIRECT = /<meta\s+http-equiv=["']?refresh["']?/i;
const LISTINGS = "_modules";
// Offline and quiet, as tests/browser.py starts it: no background connections, no first run, no GPU.
const FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
  "--disable-sync", "--no-first-run", "--disable-quic"];

function pages(target) {
  if (fs.statSync(target).isFile()) return target.endsWith(".html") ? [target] : [];
  const found = [];
  for (const entry of fs.readdirSync(target, { withFileTypes: true })) {
    const full = path.join(target, entry.name);
    if (entry.isDirectory() && !SKIP.has(entry.name)) found.push(...pages(full));
    else if (entry.isFile() && entry.name.endsWith(".html")) found.push(full);
  }
  return found.sort();
}

function chromium() {
  const candidates = [process.env.CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome"].filter(Boolean);
  const found = candidates.find((c) => fs.existsSync(c));
  if (!found) throw new Error("no Chromium on this machine: apt install chromium (or set CHROMIUM)");
  return found;
}

async function check(tab, file) {
  await tab.goto(pathToFileURL(path.resolve(file)).href, { waitUntil: "load", timeout: 120000 });
  // MathJax typesets after its script loads: check the maths as a reader gets it (with its assistive MathML).
  await tab.evaluate(() => new Promise((resolve) => {
    const startup = window.MathJax && window.MathJax.startup;
    if (!startup || !startup.promise) return resolve();
    startup.promise.then(resolve, resolve);
    setTimeout(resolve, 30000);
  }));
  await tab.evaluate(axe.source);
  return tab.evaluate((tags) => window.axe.run(document, {
    runOnly: { type: "tag", values: tags }, resultTypes: ["violations"],
  }).then((r) => r.violations.map((v) => ({
    rule: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => ({ target: n.target.join(" "), html: n.html })),
  }))), TAGS);
}

export async function main(argv) {
  let json = null;
  let all = false;
  let jobs = Math.min(4, os.availableParallelism ? os.availableParallelism() : os.cpus().length);
  const targets = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--json") json = argv[++i];
    else if (argv[i] === "--jobs") jobs = Math.max(1, parseInt(argv[++i], 10) || 1);
    else if (argv[i] === "--all") all = true;
    else targets.push(argv[i]);
  }
  if (!targets.length) targets.push(path.join("_build", "html"));
  const files = [];
  for (const target of targets) {
    if (!fs.existsSync(target)) {
      console.error(`no such folder or page: ${target}`);
      return 2;
    }
    const root = fs.statSync(target).isFile() ? path.dirname(target) : target;
    let listings = 0;
    for (const file of pages(target)) {
      const name = path.relative(root, file);
      const listing = name.split(path.sep)[0] === LISTINGS && name !== path.join(LISTINGS, "index.html");
      if (REDIRECT.test(fs.readFileSync(file, "utf8").slice(0, 4000))) console.log(`${name}: a redirect, not checked`);
      else if (listing && !all && listings++ > 0) continue;
      else files.push({ file, name });
    }
    if (listings > 1) console.log(`${target}: ${listings - 1} source listings under ${LISTINGS}/ not checked (--all checks them)`);
  }
  if (!files.length) {
    console.error(`no HTML pages under ${targets.join(", ")}`);
    return 2;
  }
  const start = Date.now();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "attnbook-a11y-"));
  const browser = await puppeteer.launch({
    executablePath: chromium(), headless: true, args: [...FLAGS, `--user-data-dir=${profile}`],
    defaultViewport: { width: WIDTH, height: 1000 },
  });
  const results = new Array(files.length);
  try {
    let next = 0;
    const worker = async () => { // one tab per job, each taking the next page until none is left
      const tab = await browser.newPage();
      await tab.setBypassCSP(true); // axe's script beside the page's own; nothing else changes
      while (next < files.length) {
        const i = next++;
        try {
          results[i] = await check(tab, files[i].file);
        } catch (err) {
          results[i] = [{ rule: "page-not-checked", impact: "critical", help: String(err.message || err),
            nodes: [{ target: "html", html: "" }] }];
        }
      }
      await tab.close();
    };
    await Promise.all(Array.from({ length: Math.min(jobs, files.length) }, worker));
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  const found = [];
  const perRule = new Map();
  files.forEach(({ name }, i) => {
    for (const v of results[i]) {
      const rule = perRule.get(v.rule) || { pages: new Set(), nodes: 0 };
      rule.pages.add(name);
      rule.nodes += v.nodes.length;
      perRule.set(v.rule, rule);
      for (const node of v.nodes) {
        console.log(`${name}: ${v.rule} (${v.impact}): ${v.help}: ${node.target} `
          + node.html.replace(/\s+/g, " ").slice(0, 200));
        found.push({ page: name, rule: v.rule, impact: v.impact, target: node.target, html: node.html });
      }
    }
  });
  if (json) fs.writeFileSync(json, JSON.stringify(found, null, 1) + "\n");
  for (const [rule, { pages: where, nodes }] of [...perRule].sort()) {
    console.log(`${rule}: ${nodes} elements on ${where.size} pages`);
  }
  const failed = new Set(found.map((f) => f.page)).size;
  console.log(`axe-core ${axe.version} (${TAGS.join(", ")}) at ${WIDTH} px: ${files.length} pages checked, `
    + `${found.length} violations on ${failed} pages, in ${((Date.now() - start) / 1000).toFixed(1)} s`);
  return found.length ? 1 : 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).then((code) => process.exit(code), (err) => {
    console.error(err);
    process.exit(2);
  });
}
