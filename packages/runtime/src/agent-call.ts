// agent() lives in ./agent/, one file per concept; this module keeps the old import path working.
export { RETURN_CONTRACT_VERSION, callAgent } from './agent/call.js'
export { matchChoice } from './agent/choice.js'
