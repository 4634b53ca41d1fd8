/** `npm run call`: the partner SDK's command line (sdk/src/cli.ts), the `partner-api` bin of the SDK package. */
import '../../sdk/src/cli';
