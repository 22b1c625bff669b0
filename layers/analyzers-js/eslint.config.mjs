// The review stage's eslint configuration (p4review/adapters/analyzers.py passes it with
// --config, so a change cannot ship its own and silence the analyzer). Defects only: rules that
// find bugs, unsafe code and swallowed errors; style is not reported.
import js from "@eslint/js";
import noUnsanitized from "eslint-plugin-no-unsanitized";
import security from "eslint-plugin-security";
import globals from "globals";

const defects = {
  // @eslint/js "recommended" rules that report bugs, not taste.
  "constructor-super": "error",
  "for-direction": "error",
  "getter-return": "error",
  "no-async-promise-executor": "error",
  "no-compare-neg-zero": "error",
  "no-cond-assign": "error",
  "no-const-assign": "error",
  "no-constant-binary-expression": "error",
  "no-constant-condition": ["error", { checkLoops: false }],
  "no-dupe-args": "error",
  "no-dupe-class-members": "error",
  "no-dupe-else-if": "error",
  "no-dupe-keys": "error",
  "no-duplicate-case": "error",
  "no-empty": ["warn", { allowEmptyCatch: false }],
  "no-fallthrough": "warn",
  "no-func-assign": "error",
  "no-import-assign": "error",
  "no-invalid-regexp": "error",
  "no-loss-of-precision": "error",
  "no-new-native-nonconstructor": "error",
  "no-obj-calls": "error",
  "no-self-assign": "error",
  "no-self-compare": "error",
  "no-setter-return": "error",
  "no-sparse-arrays": "warn",
  "no-this-before-super": "error",
  "no-undef": "error",
  "no-unreachable": "error",
  "no-unsafe-finally": "error",
  "no-unsafe-negation": "error",
  "no-unsafe-optional-chaining": "error",
  "no-unused-vars": ["warn", { args: "none", caughtErrors: "none", ignoreRestSiblings: true }],
  "no-use-before-define": ["warn", { functions: false, classes: false, variables: true }],
  "require-atomic-updates": "warn",
  "use-isnan": "error",
  "valid-typeof": "error",
  // Code from strings.
  "no-eval": "error",
  "no-implied-eval": "error",
  "no-new-func": "error",
  // Security: eslint-plugin-security and Mozilla's no-unsanitized (innerHTML, document.write...).
  ...security.configs.recommended.rules,
  // Every obj[key] and every fs call with a variable name: too many reports to read.
  "security/detect-object-injection": "off",
  "security/detect-non-literal-fs-filename": "off",
  ...noUnsanitized.configs.recommended.rules,
};

export default [
  {
    files: ["**/*.js", "**/*.mjs", "**/*.jsx"],
    languageOptions: {
      ecmaVersion: "latest",
      sourceType: "module",
      parserOptions: { ecmaFeatures: { jsx: true } },
      globals: { ...globals.browser, ...globals.node, ...globals.commonjs },
    },
    plugins: { security, "no-unsanitized": noUnsanitized },
    rules: defects,
  },
  {
    files: ["**/*.cjs"],
    languageOptions: {
      ecmaVersion: "latest",
      sourceType: "commonjs",
      globals: { ...globals.node, ...globals.commonjs },
    },
    plugins: { security, "no-unsanitized": noUnsanitized },
    rules: defects,
  },
  {
    // Test files (the runner copies them under a test/ folder): the test runners' globals, which a
    // project's own configuration declares for them, or no-undef reports every `describe` and `it`.
    files: ["**/test/**"],
    languageOptions: { globals: { ...globals.mocha, ...globals.jest } },
  },
];
