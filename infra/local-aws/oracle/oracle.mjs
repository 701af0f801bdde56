// I-1: the differential oracle. Every row of the table (infra/local-aws/iam/oracle_table.py:
// requests drawn from a real run, each decided for every function's role by the local
// stack's evaluator) is decided again by @cloud-copilot/iam-simulate, a maintained IAM
// simulator (identity and resource policies, every condition operator, KMS key-policy
// trust). Exits 1 on the first disagreement's report if any row disagrees.
//
//   node oracle.mjs TABLE.json
import { readFileSync } from 'node:fs'
import { runSimulation } from '@cloud-copilot/iam-simulate'
import { loadPolicy } from '@cloud-copilot/iam-policy'

// The simulator's own parts, for `decideKeepingEveryKey` (its runUnsafeSimulation loads a
// resource policy without a name and then fails reading it).
const lib = (path) => import(new URL(`./node_modules/@cloud-copilot/iam-simulate/dist/esm/${path}`, import.meta.url))
const { authorize } = await lib('core_engine/CoreSimulatorEngine.js')
const { AwsRequestImpl } = await lib('request/request.js')
const { RequestContextImpl } = await lib('requestContext.js')
const { DiscoveryContextKeyConstraints } = await lib('context_keys/discoveryContextKeyConstraints.js')

function decideKeepingEveryKey(simulation) {
  const request = new AwsRequestImpl(
    simulation.request.principal,
    simulation.request.resource,
    simulation.request.action,
    new RequestContextImpl(simulation.request.contextVariables),
  )
  return authorize({
    request,
    sessionPolicy: undefined,
    identityPolicies: simulation.identityPolicies.map((p) => loadPolicy(p.policy, { name: p.name })),
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    resourcePolicy: simulation.resourcePolicy
      ? loadPolicy(simulation.resourcePolicy, { name: 'key policy' })
      : undefined,
    permissionBoundaries: undefined,
    vpcEndpointPolicies: undefined,
    simulationParameters: {
      simulationMode: 'Strict',
      discoveryContextKeyConstraints: new DiscoveryContextKeyConstraints([]),
    },
    serviceSettings: { s3: {} },
  }).result
}

const ACCOUNT = '123456789012'
// The evaluator's logical names (`@Table`, `@SecretPrefix/`) are not valid resource names.
const valid = (v) => JSON.parse(JSON.stringify(v).replaceAll('@', 'cslogical-'))

const rows = JSON.parse(readFileSync(process.argv[2], 'utf8'))
let agree = 0
let unvalidated = 0
const disagreements = []
const errors = []
for (const row of rows) {
  const r = valid(row)
  const simulation = {
    request: {
      principal: r.principal,
      action: r.action,
      resource: { resource: r.resource, accountId: ACCOUNT },
      contextVariables: r.context,
    },
    identityPolicies: r.identity.map((policy, i) => ({ name: `identity${i}`, policy })),
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    ...(r.key_policy ? { resourcePolicy: r.key_policy } : {}),
  }
  const result = await runSimulation(simulation, {})
  if (result.resultType === 'error') {
    errors.push({ row: row.id, errors: result.errors })
    continue
  }
  let outcome = result.overallResult
  if (result.resultType === 'single' && result.result.ignoredContextKeys?.length) {
    // The simulator's context-key check knows `/` variables (aws:PrincipalTag/…) but
    // not KMS's `kms:EncryptionContext:<key>`, and drops them; the request was validated
    // above, so it is decided again with every key kept.
    unvalidated += 1
    outcome = decideKeepingEveryKey(simulation)
  }
  const allowed = outcome === 'Allowed'
  if (allowed === row.allowed) agree += 1
  else disagreements.push({ row: row.id, evaluator: row.allowed, oracle: outcome })
}
console.log(
  `I-1 oracle: ${agree} of ${rows.length} rows agree; ${disagreements.length} disagree; ${errors.length} the oracle could not run; ${unvalidated} decided with kms:EncryptionContext keys kept`,
)
for (const d of disagreements.slice(0, 20)) console.log('  disagree', JSON.stringify(d))
for (const e of errors.slice(0, 5)) console.log('  error', JSON.stringify(e).slice(0, 600))
process.exit(disagreements.length || errors.length ? 1 : 0)
