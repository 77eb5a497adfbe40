'use strict';
// The failure converter of every ebsync client, worker and workflow bundle: a failure's
// message and stack trace go into its encoded attributes, a payload that the payload codec
// seals like any other (worker/codec.ts). Temporal keeps failures in its history, and a
// message can hold customer data: a destination's refusal quotes the row it refused (a
// trigger's `blocked address someone@example.com`), a CRM's names the value it rejects. In
// clear, the history kept them in plaintext; sealed, Temporal and its UI show `Encoded
// failure`, and ebsync's commands, which hold the keys, show the message.
//
// CommonJS because Temporal loads it by path in three places: require() in the worker and
// in every client (from the sources or from dist/), and webpack into the workflow bundle.
const { DefaultFailureConverter } = require('@temporalio/common');

exports.failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
