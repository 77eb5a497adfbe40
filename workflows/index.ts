export { healthCheckWorkflow, type HealthReport } from './health.js';
