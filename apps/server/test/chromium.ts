import { existsSync } from 'node:fs'
import { type Browser, chromium } from 'playwright-core'

/** Debian's `chromium` package; never a downloaded browser. `LOCUS_CHROMIUM` points elsewhere. */
export const CHROMIUM_PATH = process.env.LOCUS_CHROMIUM ?? '/usr/bin/chromium'

/** True when the browser tests can run; CI sets `LOCUS_REQUIRE_CHROMIUM=1` so a missing browser fails instead of skipping. */
export function chromiumAvailable(): boolean {
  if (existsSync(CHROMIUM_PATH)) return true
  const message = `Chromium is not at ${CHROMIUM_PATH}: install Debian's package (apt-get install -y chromium) or set LOCUS_CHROMIUM; the inspector's browser tests are skipped.`
  if (process.env.LOCUS_REQUIRE_CHROMIUM === '1') throw new Error(message)
  console.warn(message)
  return false
}

/** Headless Chromium from {@link CHROMIUM_PATH}. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] })
}
