#!/usr/bin/env node
// A Moon bot in Node.js, written from proto/moon/v1/*.proto alone (copied into ./proto so
// this folder is self-contained).
//
//   npm ci --omit=dev
//   MOONSHOT_REFEREE=127.0.0.1:50051 MOONSHOT_TOKEN=<the bot's token> node bot.js
//
// One Play stream carries every match the bot plays. The bot answers each decision
// request with one of its legal actions (a random one; MOONSHOT_STRATEGY=first takes the
// first), answers the referee's pings, and reconnects with backoff when the stream
// breaks, naming the newest kept event it handled (metadata `moonshot-last-event-id`) so
// the referee replays what it missed; pending requests are delivered again by the
// referee. A refused token ends the process with status 2 and one line on stderr.
//
// Environment:
//   MOONSHOT_REFEREE   the referee: HOST:PORT (default localhost:50051), or unix:///path
//   MOONSHOT_TOKEN     the bot's token (from RegisterBot / `moonshot bot register`)
//   MOONSHOT_TLS=1     TLS, verified against the system's CAs
//   MOONSHOT_CA_CERT   TLS, verified against this PEM file's CA only
//   MOONSHOT_STRATEGY  random (default) or first
//   MOONSHOT_WAIT=1    keep trying when no referee answers at the start (default: exit 1)
//   MOONSHOT_LOG       info (default) or debug (a line per decision)
//
// Ctrl-C (SIGINT) finishes the matches under way and stops; a second Ctrl-C, or SIGTERM,
// leaves at once (a match left forfeits after its disconnect grace unless the bot returns).
//
// Exit status: 0 stopped, 1 no referee answered at the start, 2 the token was refused,
// 3 the stream was taken over by another process with this token, 64 a usage error.
'use strict';

const fs = require('fs');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const LAST_EVENT_ID = 'moonshot-last-event-id';
const MAX_BACKOFF_MS = 30000;

const EXIT_NO_REFEREE = 1;
const EXIT_REFUSED = 2;
const EXIT_REPLACED = 3;
const EXIT_USAGE = 64;

const DEBUG = (process.env.MOONSHOT_LOG || '').toLowerCase() === 'debug';

function log(level, message) {
  if (level === 'debug' && !DEBUG) return;
  process.stderr.write(`${new Date().toISOString()} ${level.toUpperCase()} node-bot: ${message}\n`);
}

function fatal(status, message) {
  log('error', message);
  process.exit(status);
}

// The protocol, from the .proto copies beside this file (google/protobuf/timestamp.proto
// comes with protobufjs).
function loadProtocol() {
  const packageDefinition = protoLoader.loadSync('moon/v1/bot.proto', {
    includeDirs: [path.join(__dirname, 'proto')],
    keepCase: true, // field names as in the .proto: request_id, legal_actions, ...
    longs: String, // uint64 nonces round-trip exactly
    enums: String,
    defaults: true,
    oneofs: true, // msg.message names the oneof member that is set
  });
  return grpc.loadPackageDefinition(packageDefinition).moon.v1;
}

function credentials() {
  const ca = process.env.MOONSHOT_CA_CERT;
  if (ca) return grpc.credentials.createSsl(fs.readFileSync(ca));
  if (['1', 'true', 'yes'].includes((process.env.MOONSHOT_TLS || '').toLowerCase())) {
    return grpc.credentials.createSsl();
  }
  return grpc.credentials.createInsecure();
}

// What gRPC says when the connection itself failed (no call reached a referee), as
// opposed to an UNAVAILABLE a referee answered.
const NOT_ANSWERED = ['failed to connect', 'socket closed', 'connection refused', 'handshake',
  'dns resolution failed', 'connections to all backends failing', 'no route to host',
  'connection reset', 'no connection established', 'enoent', 'econnrefused'];

function notAnswered(details) {
  const low = (details || '').toLowerCase();
  return NOT_ANSWERED.some((s) => low.includes(s));
}

function choose(request, strategy) {
  const legal = request.legal_actions;
  if (strategy === 'first') return legal[0];
  return legal[Math.floor(Math.random() * legal.length)];
}

class Runner {
  constructor(target, token, options) {
    this.target = target;
    this.token = token;
    this.strategy = options.strategy;
    this.wait = options.wait;
    this.BotService = loadProtocol().BotService;
    this.connected = false; // a referee has welcomed the bot (reconnects are retried)
    this.lastEventId = ''; // of the newest kept event handled: where a reconnect resumes
    this.underWay = new Map(); // match id -> its disconnect grace in ms (null: unknown)
    this.decisions = 0;
    this.stopping = false;
    this.finishing = null; // Set of matches to finish before stopping (first Ctrl-C)
    this.call = null;
    this.client = null;
    this.timer = null;
  }

  run() {
    this.backoff = 250;
    this.session();
  }

  session() {
    if (this.stopping) return;
    this.started = Date.now();
    this.client = new this.BotService(this.target, credentials(), {
      'grpc.keepalive_time_ms': 20000,
      'grpc.keepalive_timeout_ms': 10000,
      'grpc.keepalive_permit_without_calls': 1,
    });
    log('debug', `opening the Play stream${this.lastEventId ? ` after event ${this.lastEventId}` : ''}`);
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${this.token}`);
    if (this.lastEventId) metadata.set(LAST_EVENT_ID, this.lastEventId);
    const call = this.client.Play(metadata);
    this.call = call;
    call.on('data', (msg) => this.receive(call, msg));
    call.on('error', () => {}); // said again, with its code, by 'status'
    call.on('status', (status) => { // once per call, whatever ended it
      if (this.call === call) this.call = null;
      this.client.close();
      this.onStreamEnd(status);
    });
  }

  onStreamEnd(status) {
    if (this.stopping) return;
    const code = status.code;
    const details = (status.details || '').replace(/\.?\s*Resolution note:\s*$/, '');
    let reason = 'stream ended';
    if (code !== grpc.status.OK) {
      if (code === grpc.status.UNAUTHENTICATED || code === grpc.status.PERMISSION_DENIED) {
        fatal(EXIT_REFUSED, `referee refused the token: ${details} (check MOONSHOT_TOKEN)`);
      }
      if (code === grpc.status.ABORTED) {
        fatal(EXIT_REPLACED, `stream closed by the referee: ${details}`);
      }
      reason = `${grpc.status[code] || code}: ${details}`;
      if (!this.connected && code === grpc.status.UNAVAILABLE && notAnswered(details)) {
        const why = `no referee answered at ${this.target} (${details}): is it running ` +
          'there? Set MOONSHOT_REFEREE to its address';
        if (!this.wait) fatal(EXIT_NO_REFEREE, why);
        if (!this.saidWaiting) log('warning', `${why}; waiting for a referee there`);
        this.saidWaiting = true;
        reason = '';
      }
    }
    if (Date.now() - this.started > 10000) this.backoff = 250; // it was healthy: start gently
    const delay = Math.round(this.backoff * (0.5 + Math.random()));
    if (reason) log('warning', `disconnected (${reason}); reconnecting in ${delay} ms`);
    this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS);
    this.timer = setTimeout(() => { this.timer = null; this.session(); }, delay);
  }

  send(call, request) {
    if (call.destroyed || call.writableEnded) return; // the read side ends the session
    try {
      call.write(request);
    } catch (err) {
      log('debug', `write failed: ${err.message}`);
    }
  }

  receive(call, msg) {
    const kind = msg.message;
    switch (kind) {
      case 'ping': // answered at once: the referee checks that the bot is alive
        this.send(call, { pong: { nonce: msg.ping.nonce } });
        log('debug', `answered ping ${msg.ping.nonce}`);
        break;
      case 'decision_request':
        this.decide(call, msg.decision_request);
        break;
      case 'welcome':
        this.welcome(msg.welcome);
        break;
      case 'match_started': {
        const ms = msg.match_started;
        log('info', `match ${ms.match_id} started: seat ${ms.seat} of [${ms.seat_names.join(', ')}]`);
        this.underWay.set(ms.match_id, ms.faults ? ms.faults.disconnect_grace_ms : null);
        break;
      }
      case 'match_ended': {
        const me = msg.match_ended;
        const r = me.result || {};
        this.underWay.delete(me.match_id);
        log('info', `match ${me.match_id} ended: ${r.end}, placement [${(r.placement || []).join(', ')}]` +
          ` (seat ${me.seat}; ${this.underWay.size} in play; ${this.decisions} decisions so far)`);
        this.checkFinished();
        break;
      }
      case 'decision_rejected': {
        const d = msg.decision_rejected;
        log('warning', `decision ${d.request_id} rejected (${d.reason}): ${d.message}` +
          ` (strikes ${d.strikes})`);
        break;
      }
      case 'decision_accepted':
        log('debug', `decision ${msg.decision_accepted.request_id} accepted`);
        break;
      case 'pong':
        break;
      default:
        log('debug', `ignored a message of an unknown kind (${kind})`);
    }
    if (msg.event_id && kind !== 'decision_request') this.lastEventId = msg.event_id;
  }

  welcome(w) {
    log('info', `connected to ${this.target} as ${w.name} (${w.bot_id}); referee ${w.server_version}`);
    if (w.replaced_another && !this.connected) { // not this process's own reconnect
      log('warning', 'another process was connected with this bot\'s token and has been ' +
        'disconnected: two processes with one token replace each other; if that was not ' +
        `you, rotate the token (moonshot bot rotate ${w.name})`);
    }
    this.connected = true;
    if (w.live_matches) { // unset from an older referee
      const live = new Set(w.live_matches.match_ids);
      for (const m of this.underWay.keys()) {
        if (!live.has(m)) {
          log('info', `match ${m} is over (its end came while away)`);
        }
      }
      const before = this.underWay;
      this.underWay = new Map([...live].map((m) => [m, before.has(m) ? before.get(m) : null]));
      this.checkFinished();
    }
  }

  decide(call, req) {
    // Every request carries the full observation, so no memory of the match is needed,
    // and a request delivered again after a reconnect is simply answered again.
    if (!req.legal_actions || req.legal_actions.length === 0) {
      log('error', `${req.match_id} seat ${req.seat}: no legal actions in ${req.request_id}`);
      return;
    }
    const action = choose(req, this.strategy);
    this.decisions += 1;
    log('debug', `${req.match_id} seat ${req.seat}: ${action.label} (${req.request_id})`);
    this.send(call, { decision: { request_id: req.request_id, action_id: action.id } });
  }

  // What leaving now costs, for people ('' when nothing is under way).
  forfeits(which) {
    const n = this.underWay.size;
    if (!n) return '';
    const games = n === 1 ? `the game ${which}` : `the ${n} games ${which}`;
    return `${games} (${[...this.underWay.keys()].sort().join(', ')}) ` +
      `${n === 1 ? 'is' : 'are'} forfeited after the disconnect grace unless the bot comes back`;
  }

  checkFinished() {
    if (this.finishing === null || this.stopping) return;
    if ([...this.finishing].some((m) => this.underWay.has(m))) return;
    const later = this.forfeits('started since the signal');
    log('warning', `the games under way at the signal are over: stopping${later ? `; ${later}` : ''}`);
    this.stop(0);
  }

  // First SIGINT (Ctrl-C): finish the matches under way, then stop; a second: leave now.
  interrupt(signal) {
    if (this.finishing === null) {
      this.finishing = new Set(this.underWay.keys());
      if (!this.finishing.size) {
        log('warning', `${signal}: no game under way: stopping`);
        this.stop(0);
        return;
      }
      log('warning', `${signal}: finishing the games under way (${[...this.finishing].sort().join(', ')}); ` +
        `${signal} again to leave now`);
      return;
    }
    this.leave(`${signal} again`);
  }

  // Leave at once (SIGTERM, or a second SIGINT), saying what that forfeits.
  leave(why) {
    const said = this.forfeits('under way');
    log('warning', `${why}: leaving now${said ? `; ${said}` : ''}`);
    this.stop(0);
  }

  stop(status) {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.call) this.call.cancel();
    if (this.client) this.client.close();
    process.exit(status);
  }
}

function main() {
  const target = process.env.MOONSHOT_REFEREE || 'localhost:50051';
  const token = process.env.MOONSHOT_TOKEN || '';
  if (!token) fatal(EXIT_USAGE, 'no token: set MOONSHOT_TOKEN to the bot\'s token (from RegisterBot)');
  const strategy = (process.env.MOONSHOT_STRATEGY || 'random').toLowerCase();
  if (!['random', 'first'].includes(strategy)) {
    fatal(EXIT_USAGE, `MOONSHOT_STRATEGY must be random or first, not ${strategy}`);
  }
  const wait = ['1', 'true', 'yes'].includes((process.env.MOONSHOT_WAIT || '').toLowerCase());
  const runner = new Runner(target, token, { strategy, wait });
  process.on('SIGINT', () => runner.interrupt('SIGINT'));
  process.on('SIGTERM', () => runner.leave('SIGTERM'));
  log('info', `connecting to ${target} (strategy: ${strategy})`);
  runner.run();
}

if (require.main === module) main();

module.exports = { Runner, loadProtocol, choose };
