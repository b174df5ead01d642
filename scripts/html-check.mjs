// Opens an HTML export in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core) and prints one JSON object: what the page shows, whether a fold opens
// on click, the colours in light and dark, and any request that left the file (there must
// be none). Screenshots go to OUTDIR (light.png, fold-open.png, dark.png, blank.png).
//
//   NODE_PATH=.oracle/playwright/node_modules node scripts/html-check.mjs PAGE.html OUTDIR
import { createRequire } from "node:module";
import { statSync } from "node:fs";
import { resolve } from "node:path";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");
const [page_file, outDir] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
try {
	const context = await browser.newContext({ viewport: { width: 1000, height: 1200 }, colorScheme: "light" });
	const page = await context.newPage();
	const requests = [];
	page.on("request", (r) => {
		if (!r.url().startsWith("file:")) requests.push(r.url());
	});
	const shot = async (name) => {
		const path = `${outDir}/${name}.png`;
		await page.screenshot({ path });
		return statSync(path).size;
	};
	await page.goto("about:blank");
	const blank = await shot("blank");
	await page.goto("file://" + resolve(page_file));
	const out = { blankPng: blank, requests };
	out.title = await page.title();
	out.h1 = await page.locator("h1").first().innerText();
	out.details = await page.locator("details").count();
	out.openBefore = await page.locator("details[open]").count();
	out.highlighted = await page.locator("pre.hl-code span[class^='hl-']").count();
	out.lightBackground = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
	out.lightPng = await shot("light");
	// The first long tool output: a preview, then "all N lines" behind a fold.
	const fold = page.locator("details").filter({ has: page.locator("summary", { hasText: /^all \d+ lines$/ }) }).first();
	out.foldSummary = await fold.locator("summary").innerText();
	const full = fold.locator("pre");
	out.foldBodyVisibleBefore = await full.isVisible();
	await fold.locator("summary").scrollIntoViewIfNeeded();
	out.foldClosedPng = await shot("fold-closed");
	await fold.locator("summary").click();
	out.foldBodyVisibleAfter = await full.isVisible();
	out.foldBodyLines = (await full.innerText()).split("\n").length;
	out.openAfter = await page.locator("details[open]").count();
	out.foldOpenPng = await shot("fold-open");
	await page.emulateMedia({ colorScheme: "dark" });
	await page.evaluate(() => window.scrollTo(0, 0));
	out.darkBackground = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
	out.darkText = await page.evaluate(() => getComputedStyle(document.body).color);
	out.darkPng = await shot("dark");
	process.stdout.write(`${JSON.stringify(out)}\n`);
} finally {
	await browser.close();
}
