export { healthCheckWorkflow, type HealthReport } from './health.js';
export { connectionWorkflow } from './connection.js';
export { mirrorWorkflow } from './mirror.js';
export { scheduledMirrorWorkflow } from './scheduled-mirror.js';
export { recordWorkflow } from './record.js';
export { webhookDrainWorkflow } from './drain.js';
