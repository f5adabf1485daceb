/**
 * The main job behind `npm run demo`: runs the runnable examples one after
 * another and prints what each shows. Later packages add their examples here.
 */
import { main as classifyReturns } from './outcomes/classify-returns.js'

console.log('Locus demo: how returned values are judged (docs/examples/outcomes/classify-returns.ts)\n')
const verdicts = classifyReturns()
const failures = verdicts.filter((verdict) => verdict.verdict !== 'success').length
console.log(`\n${verdicts.length} values judged: ${verdicts.length - failures} success, ${failures} failure or boundary error.`)
console.log('Read docs/outcomes.md for the rules behind each verdict.')
