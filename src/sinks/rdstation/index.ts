// The RD Station Marketing sink's public face, for the sink registry: options, opening, authorization.
export { authorize, type AuthorizeOptions, type AuthorizeResult } from './auth.js';
export { rdstationFields, type RdLegalBasis, type RdStationConfig } from './fields.js';
export {
  openRdStationSink,
  rdstationConfigSchema,
  rdstationOAuthProvider,
  rdstationOptions,
  type RdStationFlagValues,
  type RdStationOptions,
} from './options.js';
export {
  DEFAULT_CONVERSION_IDENTIFIER,
  RDSTATION_DEFAULT_URL,
  RdStationSink,
  type RdStationSinkOptions,
} from './sink.js';
