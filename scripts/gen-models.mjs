// Regenerates assets/models.tsv from Pi's own built-in model list (pi-ai's MODELS table).
//   PI_HOME=<dir with node_modules/@earendil-works> node scripts/gen-models.mjs > assets/models.tsv
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { readFileSync } from "node:fs";
const root = join(process.env.PI_HOME, "node_modules", "@earendil-works", "pi-ai");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const { MODELS } = await import(pathToFileURL(join(root, "dist", "models.generated.js")).href);
const rows = [];
for (const [provider, models] of Object.entries(MODELS)) {
  for (const m of Object.values(models)) {
    rows.push([m.provider ?? provider, m.id, m.api, m.baseUrl ?? "", m.contextWindow ?? 0, m.maxTokens ?? 0, m.reasoning ? 1 : 0, (m.input ?? []).join(","), m.cost?.input ?? 0, m.cost?.output ?? 0, m.cost?.cacheRead ?? 0, m.cost?.cacheWrite ?? 0].join("\t"));
  }
}
rows.sort();
process.stdout.write(`# pi-ai ${pkg.version} built-in models: provider\tid\tapi\tbaseUrl\tcontextWindow\tmaxTokens\treasoning\tinput\tcostInput\tcostOutput\tcostCacheRead\tcostCacheWrite (USD per 1M tokens)\n${rows.join("\n")}\n`);
