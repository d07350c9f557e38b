'use strict';
// soakd's Donut API on Node: a GraphQL server soakd does not host, for
// `target.kind: command` or `attach` (docs/own-server.md).
//
//   node server.js [port]          PORT=4000 DONUTS=1000 node server.js
//
// It serves, on 127.0.0.1 only:
//   /graphql           graphql-yoga over soakd's schema (internal/graph/schema.graphqls):
//                      POST, GET; websocket subscriptions over
//                      graphql-transport-ws (graphql-ws) and the legacy
//                      graphql-ws protocol (subscriptions-transport-ws's)
//   /api/donuts/{id}   the REST twin: GET, PUT {"name":"…","flavor":"…"},
//                      the same JSON, status codes and errors as soakd's
//                      built-in control group (control/control.go)
//   /metrics           prom-client's default metrics (heap, GC, event loop)
//   /healthz           "ok" once listening
// Donuts "1".."DONUTS" are seeded as soakd's are (donut.SeedDonut): named
// donut-<i>, flavored VANILLA, STRAWBERRY, CHOCOLATE by i mod 3 = 0, 1, 2.
// The port comes from the first argument, else PORT (0: a free one, printed
// on standard output). SIGTERM or SIGINT closes the listener and exits 0.

const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { createYoga, createSchema, createPubSub } = require('graphql-yoga');
const { WebSocketServer } = require('ws');
const { useServer } = require('graphql-ws/use/ws');
const { parse, validate, subscribe, GraphQLError } = require('graphql');
const promClient = require('prom-client');

const FLAVORS = ['VANILLA', 'STRAWBERRY', 'CHOCOLATE'];
// MAX_BODY_BYTES is the REST PUT body limit, as the built-in target's
// server.max_body_bytes default (1 MiB): larger bodies get 413.
const MAX_BODY_BYTES = 1 << 20;
// MAX_MESSAGE_BYTES cuts an error message that may quote client input, as
// control.maxMessageBytes does.
const MAX_MESSAGE_BYTES = 512;
// KEEPALIVE_MS is the legacy protocol's "ka" interval (seed 002: 5 s).
const KEEPALIVE_MS = 5000;

function parsePort(v) {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    console.error(`node-donut: port ${JSON.stringify(v)} is not a port number (0 … 65535); give it as the first argument or PORT`);
    process.exit(2);
  }
  return n;
}

const port = parsePort(process.argv[2] ?? process.env.PORT ?? '4000');
const donutCount = Number(process.env.DONUTS ?? '1000');
if (!Number.isInteger(donutCount) || donutCount < 1) {
  console.error(`node-donut: DONUTS=${JSON.stringify(process.env.DONUTS)} is not a positive whole number`);
  process.exit(2);
}

// The store and its seed, as daemon/graph seed soakd's.
const store = new Map();
for (let i = 1; i <= donutCount; i++) {
  const id = String(i);
  store.set(id, { id, name: `donut-${id}`, flavor: FLAVORS[i % 3] });
}

// Subscription events fan out by donut id: a subscriber hears only the
// donut it named.
const pubSub = createPubSub();

// update stores d and publishes it to the subscribers of its id, the same
// domain work for both arms (donut.Service.Update).
function update(d) {
  const stored = { id: d.id, name: d.name, flavor: d.flavor };
  store.set(stored.id, stored);
  pubSub.publish('donut', stored.id, stored);
  return stored;
}

const typeDefs = fs.readFileSync(
  process.env.SCHEMA ?? path.join(__dirname, '..', '..', 'internal', 'graph', 'schema.graphqls'), 'utf8');

const schema = createSchema({
  typeDefs,
  resolvers: {
    Query: {
      donut: (_, { id }) => store.get(id) ?? null,
      add: (_, { x, y }) => (x == null || y == null ? null : x + y),
    },
    Mutation: {
      addOrUpdateDonut: (_, { donut }) => update(donut),
    },
    Subscription: {
      onDonutUpdated: {
        subscribe: (_, { id }) => pubSub.subscribe('donut', id),
        resolve: (d) => d,
      },
    },
  },
});

const yoga = createYoga({
  schema,
  graphqlEndpoint: '/graphql',
  graphiql: false,
  landingPage: false,
  logging: 'warn',
});

// Prometheus: prom-client's default metrics on a registry of our own.
const registry = new promClient.Registry();
promClient.collectDefaultMetrics({ register: registry });

// REST twin: the built-in target's JSON shapes and status codes.
function send(res, status, body, headers = {}) {
  const b = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(b), ...headers });
  res.end(b);
}

function fail(res, status, msg, headers) {
  if (Buffer.byteLength(msg) > MAX_MESSAGE_BYTES) {
    msg = `${Buffer.from(msg).subarray(0, MAX_MESSAGE_BYTES).toString('utf8').replace(/\uFFFD+$/, '')}… (${Buffer.byteLength(msg)} bytes)`;
  }
  send(res, status, { errors: [{ message: msg }] }, headers);
}

function isJSON(ct) {
  const mt = ct.split(';')[0].trim().toLowerCase();
  return mt === 'application/json' || (mt.startsWith('application/') && mt.endsWith('+json'));
}

// decodeDonutBody validates a PUT body as control.decodeDonutBody does: one
// JSON object holding a non-empty name and a valid flavor, nothing else.
function decodeDonutBody(text) {
  if (text.trim() === '') throw new Error('malformed JSON: empty body');
  let b;
  try {
    b = JSON.parse(text);
  } catch (e) {
    throw new Error(`malformed JSON: ${e.message}`);
  }
  if (b === null || typeof b !== 'object' || Array.isArray(b)) {
    throw new Error(`malformed body: want a JSON object, got ${Array.isArray(b) ? 'array' : b === null ? 'null' : typeof b}`);
  }
  for (const k of Object.keys(b)) {
    if (k !== 'name' && k !== 'flavor') throw new Error(`unknown field "${k}"; the body takes only name and flavor`);
  }
  if (b.name !== undefined && typeof b.name !== 'string') throw new Error(`invalid field "name": want a string, got ${typeof b.name}`);
  if (b.flavor !== undefined && typeof b.flavor !== 'string') throw new Error(`invalid field "flavor": want a string, got ${typeof b.flavor}`);
  if (!b.name) throw new Error('invalid field "name": must not be empty');
  if (!FLAVORS.includes(b.flavor)) {
    throw new Error(`invalid field "flavor": ${JSON.stringify(b.flavor ?? '')} is not one of VANILLA, STRAWBERRY, CHOCOLATE`);
  }
  return b;
}

function rest(req, res, id) {
  if (req.method === 'GET') {
    const d = store.get(id);
    if (!d) return fail(res, 404, `donut ${JSON.stringify(id)} not found`);
    return send(res, 200, { data: { donut: d } });
  }
  if (req.method !== 'PUT') {
    return fail(res, 405, `method ${req.method} not allowed; use GET or PUT`, { Allow: 'GET, PUT' });
  }
  const ct = req.headers['content-type'];
  if (ct && !isJSON(ct)) return fail(res, 415, `content type ${JSON.stringify(ct)} is not JSON; send application/json`);
  const tooLarge = () => fail(res, 413, `request body too large: the limit is ${MAX_BODY_BYTES} bytes`);
  if (Number(req.headers['content-length'] ?? 0) > MAX_BODY_BYTES) return tooLarge();
  const chunks = [];
  let size = 0;
  let over = false;
  req.on('data', (c) => {
    size += c.length;
    if (size > MAX_BODY_BYTES) over = true;
    else chunks.push(c);
  });
  req.on('end', () => {
    if (over) return tooLarge();
    let body;
    try {
      body = decodeDonutBody(Buffer.concat(chunks).toString('utf8'));
    } catch (e) {
      return fail(res, 400, e.message);
    }
    send(res, 200, { data: { addOrUpdateDonut: update({ id, name: body.name, flavor: body.flavor }) } });
  });
  req.on('error', () => res.destroy());
}

const REST_PREFIX = '/api/donuts/';

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://localhost');
  if (url.pathname.startsWith(REST_PREFIX) && url.pathname.length > REST_PREFIX.length && !url.pathname.slice(REST_PREFIX.length).includes('/')) {
    return rest(req, res, decodeURIComponent(url.pathname.slice(REST_PREFIX.length)));
  }
  switch (url.pathname) {
    case '/graphql':
      return yoga(req, res);
    case '/metrics':
      registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'Content-Type': registry.contentType });
          res.end(text);
        },
        (err) => {
          res.writeHead(500, { 'Content-Type': 'text/plain' });
          res.end(String(err));
        });
      return undefined;
    case '/healthz':
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      return res.end('ok');
    default:
      if (url.pathname.startsWith('/api/')) return fail(res, 404, `no route for ${url.pathname}`);
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      return res.end('not found');
  }
});
// Keep-alive connections outlive the driver's 90 s idle close, as the
// built-in target's idle_timeout (120 s) does.
server.keepAliveTimeout = 120_000;

// enveloped runs a websocket operation through yoga's plugins, as its
// graphql-ws recipe does; errors come back as a list.
async function enveloped(ctx, params) {
  const { schema: s, execute, subscribe: sub, contextFactory, parse: p, validate: v } = yoga.getEnveloped({
    ...ctx, req: ctx.extra?.request, socket: ctx.extra?.socket, params,
  });
  let document;
  try {
    document = p(params.query);
  } catch (e) {
    return { errors: [e instanceof GraphQLError ? e : new GraphQLError(String(e))] };
  }
  const errors = v(s, document);
  if (errors.length) return { errors };
  return {
    args: {
      schema: s, operationName: params.operationName, document, variableValues: params.variables,
      contextValue: await contextFactory(), rootValue: { execute, subscribe: sub },
    },
  };
}

// graphql-transport-ws (the graphql-ws library).
const modern = new WebSocketServer({ noServer: true });
useServer({
  execute: (args) => args.rootValue.execute(args),
  subscribe: (args) => args.rootValue.subscribe(args),
  onSubscribe: async (ctx, _id, params) => {
    const r = await enveloped(ctx, params);
    return r.errors ?? r.args;
  },
}, modern);

// The legacy graphql-ws protocol (subscriptions-transport-ws, unmaintained
// since 2021, so spoken here directly): connection_init → connection_ack and
// "ka" every KEEPALIVE_MS; start → data… complete (or error); stop;
// connection_terminate.
const legacy = new WebSocketServer({ noServer: true });
legacy.on('connection', (socket, request) => {
  const ops = new Map(); // id → async iterator
  let ka = null;
  const out = (m) => { if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(m)); };
  const stop = (id) => {
    const it = ops.get(id);
    ops.delete(id);
    if (it?.return) it.return();
  };
  socket.on('message', async (raw) => {
    let m;
    try {
      m = JSON.parse(raw.toString());
    } catch {
      return out({ type: 'connection_error', payload: { message: 'message is not JSON' } });
    }
    switch (m.type) {
      case 'connection_init':
        out({ type: 'connection_ack' });
        if (!ka) {
          out({ type: 'ka' });
          ka = setInterval(() => out({ type: 'ka' }), KEEPALIVE_MS);
        }
        return undefined;
      case 'start': {
        const id = m.id;
        if (ops.has(id)) stop(id);
        const r = await enveloped({ extra: { request, socket } }, m.payload ?? {});
        if (r.errors) return out({ type: 'error', id, payload: r.errors.map((e) => ({ message: e.message })) });
        const result = await r.args.rootValue.subscribe(r.args);
        if (!result || typeof result[Symbol.asyncIterator] !== 'function') {
          // A query or mutation sent over the socket: one result, then complete.
          out({ type: 'data', id, payload: result });
          return out({ type: 'complete', id });
        }
        ops.set(id, result);
        for await (const ev of result) {
          if (!ops.has(id)) break;
          out({ type: 'data', id, payload: ev });
        }
        if (ops.delete(id)) out({ type: 'complete', id });
        return undefined;
      }
      case 'stop':
        return stop(m.id);
      case 'connection_terminate':
        return socket.close(1000);
      default:
        return out({ type: 'error', id: m.id, payload: { message: `unknown message type ${JSON.stringify(m.type)}` } });
    }
  });
  socket.on('close', () => {
    clearInterval(ka);
    for (const id of [...ops.keys()]) stop(id);
  });
});

// Route an upgrade by its subprotocol: the legacy one to the hand-written
// handler, everything else to graphql-ws (which refuses what it does not speak).
server.on('upgrade', (req, sock, head) => {
  if (new URL(req.url, 'http://localhost').pathname !== '/graphql') {
    sock.destroy();
    return;
  }
  const protocols = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((s) => s.trim());
  const wss = protocols.includes('graphql-ws') && !protocols.includes('graphql-transport-ws') ? legacy : modern;
  wss.handleUpgrade(req, sock, head, (ws) => wss.emit('connection', ws, req));
});

server.listen(port, '127.0.0.1', () => {
  const a = server.address();
  console.log(JSON.stringify({ url: `http://127.0.0.1:${a.port}`, pid: process.pid, donuts: donutCount }));
});

function shutdown(sig) {
  console.error(`node-donut: ${sig}: closing`);
  for (const ws of [...modern.clients, ...legacy.clients]) ws.terminate();
  server.close(() => process.exit(0));
  server.closeAllConnections();
  // Whatever still holds the loop after the grace is not waited for.
  setTimeout(() => process.exit(0), 5000).unref();
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
