/**
 * The API entry points' first import: tracing, when configured, is installed before Koa and http
 * load, so their instrumentation can patch them (src/telemetry/tracing.ts).
 */
import { installTracing } from './tracing';

installTracing('partner-api');

export { activeTracing } from './tracing';
