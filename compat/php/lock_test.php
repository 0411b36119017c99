<?php
/*
 * Symfony Lock's RedisStore (Debian php-symfony-lock 5.4), unmodified,
 * against tumbler, through either PHP Redis client Debian ships:
 * phpredis (php-redis, the C extension) or Predis (php-predis 1.1).
 *
 *     TUMBLER_ADDR=127.0.0.1:6379 TUMBLER_ADDRS=a:1,b:2,c:3 \
 *         /usr/bin/php compat/php/lock_test.php phpredis|predis
 *
 * TUMBLER_ADDRS (three servers, the first may be TUMBLER_ADDR) enables the
 * CombinedStore tests; they run last and SHUTDOWN the second and third
 * servers. `lock_test.php probe` prints the versions, or exits 2 when
 * something is missing.
 *
 * What the clients send (default settings): no handshake (Predis adds
 * AUTH/SELECT only when configured, phpredis only when asked). Every store
 * operation is a plain EVAL of the whole script (neither client tries
 * EVALSHA here). RedisStore keeps a lock in a sorted set: members are the
 * owners' tokens plus "__write__" for a write lock, scores their deadlines
 * in ms from the server's TIME; the key's own deadline is PEXPIREAT of the
 * highest score. The scripts call TYPE (reading `.ok` of the status
 * reply), TIME, ZREMRANGEBYSCORE, ZSCORE, ZCOUNT, ZADD, ZREM, ZREVRANGE
 * WITHSCORES and PEXPIREAT; the first save also probes whether a write may
 * follow TIME in a script (SET symfony_check_support_time 1 PX 1).
 *
 * Plain PHP CLI, no PHPUnit: each test prints "--- PASS/FAIL/SKIP: name",
 * and the last line is "<client>: N passed, N failed, N skipped"; the exit
 * status is 0 only when nothing failed. Every test uses its own key names.
 */

declare(strict_types=1);

error_reporting(E_ALL);
// A warning or notice fails the test it happens in; one silenced with @
// (Predis's connect does that) is left to the code that silenced it.
set_error_handler(function (int $no, string $msg, string $file, int $line): bool {
    if (!(error_reporting() & $no)) {
        return false;
    }
    throw new ErrorException($msg, 0, $no, $file, $line);
});

const SYMFONY_LOCK = '/usr/share/php/Symfony/Component/Lock/autoload.php';
const PREDIS = '/usr/share/php/Predis/autoload.php';

function missing(): array
{
    $m = [];
    if (!extension_loaded('redis')) {
        $m[] = 'the phpredis extension (apt-get install php-redis)';
    }
    if (!is_file(PREDIS)) {
        $m[] = PREDIS . ' (apt-get install php-predis)';
    }
    if (!is_file(SYMFONY_LOCK)) {
        $m[] = SYMFONY_LOCK . ' (apt-get install php-symfony-lock)';
    }
    return $m;
}

if ($m = missing()) {
    fwrite(STDERR, 'missing: ' . implode('; ', $m) . "\n");
    exit(2);
}
require_once SYMFONY_LOCK;
require_once PREDIS;

use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\Key;
use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\SharedLockStoreInterface;
use Symfony\Component\Lock\Store\CombinedStore;
use Symfony\Component\Lock\Store\RedisStore;
use Symfony\Component\Lock\Strategy\ConsensusStrategy;

// ---------------------------------------------------------------- clients

const LIBS = ['phpredis', 'predis'];
const IO_TIMEOUT = 5.0; // every connect and read is bounded

/** A new connection through $lib: \Redis or \Predis\Client. */
function connect(string $lib, string $addr, array $opt = [])
{
    [$host, $port] = split_addr($addr);
    if ($lib === 'phpredis') {
        $r = new \Redis();
        $r->connect($host, $port, IO_TIMEOUT, null, 0, IO_TIMEOUT);
        if (isset($opt['username'])) {
            check($r->auth([$opt['username'], $opt['password']]) === true, 'AUTH failed');
        }
        if (isset($opt['database'])) {
            check($r->select($opt['database']) === true, 'SELECT failed');
        }
        return $r;
    }
    $p = ['scheme' => 'tcp', 'host' => $host, 'port' => $port,
        'timeout' => IO_TIMEOUT, 'read_write_timeout' => IO_TIMEOUT] + $opt;
    $r = new \Predis\Client($p);
    $r->connect(); // Predis connects lazily; AUTH/SELECT go out here
    return $r;
}

function split_addr(string $addr): array
{
    $i = strrpos($addr, ':');
    if ($i === false) {
        throw new InvalidArgumentException("address $addr is not host:port");
    }
    return [substr($addr, 0, $i), (int) substr($addr, $i + 1)];
}

function disconnect($r): void
{
    if ($r instanceof \Redis) {
        $r->close();
    } else {
        $r->disconnect();
    }
}

// Replies differ between the clients; these normalize the few the tests read.

function key_type($r, string $k): string
{
    $t = $r->type($k);
    if ($r instanceof \Redis) {
        $names = [\Redis::REDIS_NOT_FOUND => 'none', \Redis::REDIS_STRING => 'string',
            \Redis::REDIS_SET => 'set', \Redis::REDIS_LIST => 'list',
            \Redis::REDIS_ZSET => 'zset', \Redis::REDIS_HASH => 'hash'];
        return $names[$t] ?? "type#$t";
    }
    return (string) $t;
}

/** Sorted-set members, sorted by name. */
function members($r, string $k): array
{
    $m = $r->zrange($k, 0, -1);
    sort($m);
    return $m;
}

function score($r, string $k, string $member): ?float
{
    $s = $r->zscore($k, $member);
    return ($s === false || $s === null) ? null : (float) $s;
}

function get_str($r, string $k): ?string
{
    $v = $r->get($k);
    return ($v === false || $v === null) ? null : (string) $v;
}

function set_nx($r, string $k, string $v): bool
{
    $ok = $r instanceof \Redis ? $r->set($k, $v, ['nx']) : $r->set($k, $v, 'NX');
    return $ok !== false && $ok !== null;
}

function raw($r, string ...$args)
{
    return $r instanceof \Redis ? $r->rawCommand(...$args) : $r->executeRaw($args);
}

/** The server's clock in ms (TIME). */
function server_ms($r): float
{
    [$s, $us] = $r->time();
    return (float) $s * 1000 + intdiv((int) $us, 1000);
}

// ------------------------------------------------------------- assertions

final class Failure extends Exception {}
final class Skipped extends Exception {}

/** file:line of the test code that called an assertion helper. */
function where(): string
{
    $at = '?';
    foreach (debug_backtrace(DEBUG_BACKTRACE_IGNORE_ARGS) as $f) {
        $fn = $f['function'] ?? '';
        if ($fn === 'where') {
            continue;
        }
        if (!in_array($fn, ['check', 'eq', 'between', 'throws', 'assertHeldBy', 'assertPTTL'], true)) {
            break;
        }
        $at = basename($f['file'] ?? '?') . ':' . ($f['line'] ?? '?');
    }
    return $at;
}

function show($v): string
{
    return var_export($v, true);
}

function check(bool $cond, string $msg): void
{
    if (!$cond) {
        throw new Failure(where() . ': ' . $msg);
    }
}

function eq($want, $got, string $what): void
{
    check($want === $got, "$what: got " . show($got) . ', want ' . show($want));
}

function between($lo, $hi, $got, string $what): void
{
    check($got >= $lo && $got <= $hi, "$what: got " . show($got) . ", want $lo..$hi");
}

/** Runs $fn and checks that it throws a $class. */
function throws(string $class, callable $fn, string $what): Throwable
{
    try {
        $fn();
    } catch (Throwable $e) {
        check($e instanceof $class, "$what: threw " . get_class($e) . ' (' . $e->getMessage() . "), want $class");
        return $e;
    }
    throw new Failure(where() . ": $what: no exception, want $class");
}

/** Polls $cond every 10 ms for at most $seconds. */
function eventually(float $seconds, callable $cond): bool
{
    $end = microtime(true) + $seconds;
    do {
        if ($cond()) {
            return true;
        }
        usleep(10000);
    } while (microtime(true) < $end);
    return (bool) $cond();
}

// ------------------------------------------------------------------ suite

final class Suite
{
    /** @var \Redis|\Predis\Client the checking connection (not a lock's) */
    public $r;
    public string $lib;
    public string $addr;
    /** @var string[] */
    public array $addrs;
    public string $prefix = '';
    private array $cleanup = [];

    public function __construct(string $lib, string $addr, array $addrs)
    {
        $this->lib = $lib;
        $this->addr = $addr;
        $this->addrs = $addrs;
        $this->r = connect($lib, $addr);
    }

    public function key(string $name = 'lock'): string
    {
        return $this->prefix . $name;
    }

    /** A LockFactory over a RedisStore on a connection of its own. */
    public function factory(?string $addr = null, array $opt = []): LockFactory
    {
        return new LockFactory(new RedisStore($this->conn($addr, $opt)));
    }

    public function conn(?string $addr = null, array $opt = [])
    {
        $c = connect($this->lib, $addr ?? $this->addr, $opt);
        $this->cleanup[] = $c;
        return $c;
    }

    /** A Lock whose Key the test keeps, to read the store's token. */
    public function lock(LockFactory $f, string $resource, ?float $ttl, bool $autoRelease = true): array
    {
        $key = new Key($resource);
        return [$f->createLockFromKey($key, $ttl, $autoRelease), $key];
    }

    public static function token(Key $key): string
    {
        check($key->hasState(RedisStore::class), 'the key has no RedisStore token');
        return $key->getState(RedisStore::class);
    }

    /** Checks that $k holds exactly $members (the lock's sorted set). */
    public function assertHeldBy(string $k, array $members, string $what, $on = null): void
    {
        $on ??= $this->r;
        sort($members);
        eq('zset', key_type($on, $k), "$what: TYPE");
        eq($members, members($on, $k), "$what: members");
    }

    public function assertPTTL(string $k, int $lo, int $hi, string $what): int
    {
        $pttl = $this->r->pttl($k);
        between($lo, $hi, $pttl, "$what: PTTL $k");
        return $pttl;
    }

    public function run(string $name, callable $fn): string
    {
        $this->prefix = "phplock:{$this->lib}:$name:" . bin2hex(random_bytes(6)) . ':';
        $this->cleanup = [];
        $t0 = microtime(true);
        echo "=== RUN $name\n";
        $status = 'PASS';
        $detail = '';
        guard(20); // a hung test fails instead of hanging the suite
        try {
            $fn($this);
        } catch (Skipped $e) {
            $status = 'SKIP';
            $detail = $e->getMessage();
        } catch (Failure $e) {
            $status = 'FAIL';
            $detail = $e->getMessage();
        } catch (Throwable $e) {
            $status = 'FAIL';
            $detail = get_class($e) . ': ' . $e->getMessage() . ' at ' . basename($e->getFile()) . ':' . $e->getLine();
            for ($p = $e->getPrevious(); $p; $p = $p->getPrevious()) {
                $detail .= "\n    caused by " . get_class($p) . ': ' . $p->getMessage();
            }
            $detail .= "\n" . preg_replace('/^/m', '    ', $e->getTraceAsString());
        } finally {
            guard(0);
        }
        try {
            $this->sweep();
        } catch (Throwable $e) {
            // a server a test shut down, say; the test itself has reported
        }
        foreach ($this->cleanup as $c) {
            try {
                disconnect($c);
            } catch (Throwable $e) {
            }
        }
        printf("--- %s: %s (%.2fs)\n", $status, $name, microtime(true) - $t0);
        if ($detail !== '') {
            echo preg_replace('/^/m', '    ', $detail), "\n";
        }
        return $status;
    }

    private function sweep(): void
    {
        $keys = $this->r->keys($this->prefix . '*');
        if ($keys) {
            $this->r->del($keys);
        }
    }
}

/** Arms (or with 0 disarms) a SIGALRM that fails the running test. */
function guard(int $seconds): void
{
    if (!function_exists('pcntl_alarm')) {
        return; // the Go driver's timeout still bounds the whole run
    }
    pcntl_async_signals(true);
    pcntl_signal(SIGALRM, function () use ($seconds) {
        throw new Failure("test did not finish within {$seconds}s");
    });
    pcntl_alarm($seconds);
}

/** Starts this script again in a worker mode; output goes to a temp file. */
final class Worker
{
    private $proc;
    public string $out;

    public function __construct(array $args)
    {
        $this->out = tempnam(sys_get_temp_dir(), 'phplock');
        $cmd = array_merge([PHP_BINARY, __FILE__], $args);
        $this->proc = proc_open($cmd, [0 => ['file', '/dev/null', 'r'],
            1 => ['file', $this->out, 'a'], 2 => ['file', $this->out, 'a']], $pipes);
        if (!is_resource($this->proc)) {
            throw new RuntimeException('cannot start ' . implode(' ', $cmd));
        }
    }

    public function output(): string
    {
        return (string) file_get_contents($this->out);
    }

    /** Waits at most $seconds; returns the exit code, or null (then killed). */
    public function wait(float $seconds): ?int
    {
        $end = microtime(true) + $seconds;
        while (true) {
            $st = proc_get_status($this->proc);
            if (!$st['running']) {
                $code = $st['exitcode'];
                proc_close($this->proc);
                return $code;
            }
            if (microtime(true) > $end) {
                proc_terminate($this->proc, 9);
                proc_close($this->proc);
                return null;
            }
            usleep(5000);
        }
    }

    public function __destruct()
    {
        if (is_resource($this->proc)) {
            proc_terminate($this->proc, 9);
            proc_close($this->proc);
        }
        @unlink($this->out);
    }
}

// ------------------------------------------------------------------ tests

$tests = [];

$tests['acquire_release'] = function (Suite $s) {
    $store = new RedisStore($s->conn());
    $f = new LockFactory($store);
    [$lock, $key] = $s->lock($f, $s->key(), 5.0);
    $k = $s->key();
    $t0 = server_ms($s->r);
    check($lock->acquire(), 'acquire on a free resource');
    $t1 = server_ms($s->r);
    // The store's first script probed TIME followed by a write and must
    // have got exactly integer 1; anything else silently switches it to
    // the PHP process's clock, which no check below could tell apart here.
    eq(true, (new ReflectionProperty(RedisStore::class, 'supportTime'))->getValue($store), 'RedisStore::$supportTime');
    check($lock->isAcquired(), 'isAcquired after acquire');
    $token = Suite::token($key);
    eq(44, strlen($token), 'token length (base64 of 32 random bytes)');
    // The key is the owner's: its token and the write marker, nothing else.
    $s->assertHeldBy($k, [$token, '__write__'], 'held');
    // Scores are deadlines from the server's own TIME, in ms.
    $sc = score($s->r, $k, $token);
    between($t0 + 5000, $t1 + 5000, $sc, 'token score (server ms deadline)');
    eq($sc, score($s->r, $k, '__write__'), '__write__ score');
    $s->assertPTTL($k, 4000, 5000, 'after acquire');
    between(4.0, 5.0, $lock->getRemainingLifetime(), 'getRemainingLifetime');
    $lock->release();
    eq(0, $s->r->exists($k), 'EXISTS after release');
    check(!$lock->isAcquired(), 'isAcquired after release');
    // A released lock can be taken again, with the same token.
    check($lock->acquire(), 'acquire again');
    $s->assertHeldBy($k, [$token, '__write__'], 'held again');
    $lock->release();
    eq(0, $s->r->exists($k), 'EXISTS after the second release');
};

$tests['second_lock_refused_while_held'] = function (Suite $s) {
    $k = $s->key();
    [$a, $ka] = $s->lock($s->factory(), $k, 10.0);
    [$b, $kb] = $s->lock($s->factory(), $k, 10.0); // another connection
    check($a->acquire(), 'a acquires');
    $pttl = $s->assertPTTL($k, 9000, 10000, 'a holds');
    check(!$b->acquire(), 'b acquires a held lock');
    check(!$b->isAcquired(), 'b isAcquired');
    // The failed save left a's key alone: its members and its deadline.
    $s->assertHeldBy($k, [Suite::token($ka), '__write__'], 'after b failed');
    $s->assertPTTL($k, $pttl - 500, $pttl, 'after b failed');
    check($a->isAcquired(), 'a still isAcquired');
    // Still refused on a second try, then granted after a's release.
    check(!$b->acquire(), 'b again');
    $a->release();
    check($b->acquire(), 'b after a released');
    $s->assertHeldBy($k, [Suite::token($kb), '__write__'], 'b holds');
    check(!$a->isAcquired(), 'a isAcquired once b holds');
    check(!$a->acquire(), 'a while b holds');
    $b->release();
};

$tests['granted_after_ttl_lapses'] = function (Suite $s) {
    $k = $s->key();
    [$a] = $s->lock($s->factory(), $k, 0.3, false);
    [$b, $kb] = $s->lock($s->factory(), $k, 5.0);
    check($a->acquire(), 'a acquires with ttl 0.3');
    $s->assertPTTL($k, 1, 300, 'a holds');
    check(!$b->acquire(), 'b while a holds');
    usleep(500000);
    // Nobody released: the key's own PEXPIREAT deadline removed it.
    eq(0, $s->r->exists($k), 'EXISTS 0.5 s into a 0.3 s lock');
    check($a->isExpired(), 'a isExpired (client side)');
    check(!$a->isAcquired(), 'a isAcquired after its ttl');
    check($b->acquire(), 'b after a lapsed');
    $s->assertHeldBy($k, [Suite::token($kb), '__write__'], 'b holds');
    $s->assertPTTL($k, 4000, 5000, 'b holds');
    $b->release();
};

$tests['refresh_extends_ttl'] = function (Suite $s) {
    $k = $s->key();
    [$a, $ka] = $s->lock($s->factory(), $k, 0.3);
    check($a->acquire(), 'acquire with ttl 0.3');
    $s->assertPTTL($k, 1, 300, 'after acquire');
    $a->refresh(5.0);
    $s->assertPTTL($k, 4500, 5000, 'after refresh(5)');
    $t = server_ms($s->r);
    between($t + 4500, $t + 5000, score($s->r, $k, Suite::token($ka)), 'token score after refresh(5)');
    usleep(500000); // past the original 0.3 s
    check($a->isAcquired(), 'isAcquired past the original ttl');
    [$b] = $s->lock($s->factory(), $k, 1.0);
    check(!$b->acquire(), 'another lock past the original ttl');
    // refresh() with the lock's own ttl shortens it again.
    $a->refresh();
    $s->assertPTTL($k, 1, 300, 'after refresh()');
    usleep(500000);
    eq(0, $s->r->exists($k), 'EXISTS after the refreshed 0.3 s');
    check($b->acquire(), 'another lock after that');
    $b->release();
};

$tests['refresh_after_expiry_fails'] = function (Suite $s) {
    $k = $s->key();
    [$a] = $s->lock($s->factory(), $k, 0.3, false);
    check($a->acquire(), 'acquire with ttl 0.3');
    usleep(500000);
    throws(LockConflictedException::class, fn () => $a->refresh(5.0), 'refresh after expiry');
    eq(0, $s->r->exists($k), 'EXISTS after the failed refresh');
};

$tests['refresh_by_non_owner_fails'] = function (Suite $s) {
    $k = $s->key();
    [$a, $ka] = $s->lock($s->factory(), $k, 10.0);
    [$b] = $s->lock($s->factory(), $k, 10.0);
    check($a->acquire(), 'a acquires');
    throws(LockConflictedException::class, fn () => $b->refresh(60.0), 'b refreshes a\'s lock');
    $s->assertHeldBy($k, [Suite::token($ka), '__write__'], 'after b\'s refresh');
    $s->assertPTTL($k, 9000, 10000, 'after b\'s refresh (not 60 s)');
    $a->release();
};

$tests['release_by_non_owner_keeps_key'] = function (Suite $s) {
    $k = $s->key();
    [$a, $ka] = $s->lock($s->factory(), $k, 10.0);
    [$b] = $s->lock($s->factory(), $k, 10.0);
    check($a->acquire(), 'a acquires');
    // Symfony's release by a non-owner is quiet: the script finds no token.
    $b->release();
    $s->assertHeldBy($k, [Suite::token($ka), '__write__'], 'after b\'s release');
    $s->assertPTTL($k, 9000, 10000, 'after b\'s release');
    check($a->isAcquired(), 'a isAcquired after b\'s release');
    check(!$b->acquire(), 'b after its own release');
    $a->release();
    eq(0, $s->r->exists($k), 'EXISTS after a\'s release');
};

$tests['release_after_expiry_spares_new_owner'] = function (Suite $s) {
    $k = $s->key();
    [$a] = $s->lock($s->factory(), $k, 0.3, false);
    [$b, $kb] = $s->lock($s->factory(), $k, 10.0);
    check($a->acquire(), 'a acquires with ttl 0.3');
    usleep(500000);
    check($b->acquire(), 'b after a lapsed');
    // a's late release must not remove b's token, nor its write marker.
    $a->release();
    $s->assertHeldBy($k, [Suite::token($kb), '__write__'], 'after a\'s late release');
    $s->assertPTTL($k, 9000, 10000, 'after a\'s late release');
    check($b->isAcquired(), 'b isAcquired');
    check(!$a->isAcquired(), 'a isAcquired');
    $b->release();
};

$tests['string_key_is_not_a_lock'] = function (Suite $s) {
    // The scripts read `redis.call("TYPE", key).ok`: a string key (a lock of
    // Symfony < 5.2, or anything else) refuses the lock and is left alone.
    $k = $s->key();
    $s->r->set($k, 'old-style');
    [$a] = $s->lock($s->factory(), $k, 5.0);
    check(!$a->acquire(), 'acquire over a string key');
    check(!$a->isAcquired(), 'isAcquired over a string key');
    eq('old-style', get_str($s->r, $k), 'the string after acquire');
    eq(-1, $s->r->pttl($k), 'PTTL of the string');
};

$tests['autorelease_on_destruct'] = function (Suite $s) {
    $k = $s->key();
    $f = $s->factory();
    $a = $f->createLock($k, 10.0); // autoRelease defaults to true
    check($a->acquire(), 'acquire');
    eq(1, $s->r->exists($k), 'EXISTS while held');
    unset($a); // __destruct: isAcquired, then release
    eq(0, $s->r->exists($k), 'EXISTS after the Lock was destroyed');
    $b = $f->createLock($k, 10.0, false);
    check($b->acquire(), 'acquire with autoRelease off');
    unset($b);
    eq(1, $s->r->exists($k), 'EXISTS after a no-autoRelease Lock was destroyed');
};

$tests['blocking_acquire_waits_for_release'] = function (Suite $s) {
    $k = $s->key();
    [$a] = $s->lock($s->factory(), $k, 10.0);
    check($a->acquire(), 'holder acquires');
    // The waiter is another PHP process: acquire(true) polls save every
    // 100 ms (RedisStore is not a BlockingStoreInterface).
    $w = new Worker([$s->lib, 'worker-wait', $s->addr, $k]);
    check(eventually(5.0, fn () => str_contains($w->output(), 'waiting ')), 'the waiter did not start: ' . $w->output());
    usleep(400000);
    check(!str_contains($w->output(), 'acquired'), 'the waiter acquired a held lock: ' . $w->output());
    check($a->isAcquired(), 'holder isAcquired while the waiter waits');
    $releasedAt = microtime(true);
    $a->release();
    $code = $w->wait(5.0);
    $out = $w->output();
    eq(0, $code, "waiter exit code (output: $out)");
    check((bool) preg_match('/^acquired (\S+)$/m', $out, $m), "no acquired line: $out");
    $at = (float) $m[1];
    check($at > $releasedAt, sprintf('the waiter acquired %.3f s before the release', $releasedAt - $at));
    check($at - $releasedAt < 1.5, sprintf('the waiter took %.3f s after the release', $at - $releasedAt));
    check(str_contains($out, 'owner ok'), "the waiter's token was not the key's: $out");
    eq(0, $s->r->exists($k), 'EXISTS after the waiter released');
};

$tests['blocking_acquire_after_ttl'] = function (Suite $s) {
    $k = $s->key();
    [$a] = $s->lock($s->factory(), $k, 0.3, false);
    [$b, $kb] = $s->lock($s->factory(), $k, 5.0);
    check($a->acquire(), 'a acquires with ttl 0.3');
    $t0 = microtime(true);
    check($b->acquire(true), 'blocking acquire'); // bounded by the test's alarm
    $waited = microtime(true) - $t0;
    between(0.15, 3.0, $waited, 'seconds waited for a 0.3 s lock');
    $s->assertHeldBy($k, [Suite::token($kb), '__write__'], 'b holds');
    $b->release();
};

$tests['shared_read_locks'] = function (Suite $s) {
    $k = $s->key();
    $f = $s->factory();
    check($f->createLock($k) instanceof \Symfony\Component\Lock\SharedLockInterface, 'Lock is a SharedLockInterface');
    check(new RedisStore($s->r) instanceof SharedLockStoreInterface, 'RedisStore is a SharedLockStoreInterface');
    [$r1, $k1] = $s->lock($f, $k, 10.0);
    [$r2, $k2] = $s->lock($s->factory(), $k, 10.0);
    [$w] = $s->lock($s->factory(), $k, 10.0);
    check($r1->acquireRead(), 'reader 1');
    check($r2->acquireRead(), 'reader 2 beside reader 1');
    $s->assertHeldBy($k, [Suite::token($k1), Suite::token($k2)], 'two readers, no __write__');
    $s->assertPTTL($k, 9000, 10000, 'two readers');
    check(!$w->acquire(), 'writer while two read');
    // Reader 1 cannot become the writer while reader 2 reads.
    check(!$r1->acquire(), 'reader 1 promotes beside reader 2');
    $r2->release();
    $s->assertHeldBy($k, [Suite::token($k1)], 'reader 1 alone');
    check(!$w->acquire(), 'writer while one reads');
    // Alone, reader 1 is promoted to a write lock, then demoted again.
    check($r1->acquire(), 'reader 1 promotes alone');
    $s->assertHeldBy($k, [Suite::token($k1), '__write__'], 'promoted');
    check(!$r2->acquireRead(), 'reader 2 beside the writer');
    check($r1->acquireRead(), 'the writer demotes itself');
    $s->assertHeldBy($k, [Suite::token($k1)], 'demoted');
    check($r2->acquireRead(), 'reader 2 after the demotion');
    $r1->release();
    $r2->release();
    eq(0, $s->r->exists($k), 'EXISTS after both readers released');
    check($w->acquire(), 'writer after the readers');
    check(!$r1->acquireRead(), 'a reader beside the writer');
    $w->release();
    // Readers' deadlines: the key lives as long as its longest reader.
    [$short] = $s->lock($f, $k, 0.3, false);
    [$long, $kl] = $s->lock($s->factory(), $k, 5.0);
    check($short->acquireRead(), 'a 0.3 s reader');
    check($long->acquireRead(), 'a 5 s reader');
    $s->assertPTTL($k, 4000, 5000, 'the key follows the longest reader');
    usleep(500000);
    check(!$short->isAcquired(), 'the 0.3 s reader after 0.5 s');
    check($long->isAcquired(), 'the 5 s reader after 0.5 s');
    $s->assertHeldBy($k, [Suite::token($kl)], 'the lapsed reader was removed');
    $long->release();
};

$tests['select_database'] = function (Suite $s) {
    // SELECT at connect: Predis sends `SELECT n` for `database => n`,
    // phpredis on select(n). A lock in database 3 is not in database 0
    // (the suite's own connection), where the same name locks apart.
    $k = $s->key();
    $r3 = $s->conn(null, ['database' => 3]);
    [$a] = $s->lock(new LockFactory(new RedisStore($r3)), $k, 5.0);
    check($a->acquire(), 'acquire after SELECT 3');
    eq(1, $r3->exists($k), 'EXISTS in database 3');
    eq(0, $s->r->exists($k), 'EXISTS in database 0 while database 3 holds the lock');
    [$b] = $s->lock($s->factory(null, ['database' => 3]), $k, 5.0);
    check(!$b->acquire(), 'another SELECT 3 connection');
    [$c, $kc] = $s->lock($s->factory(), $k, 5.0);
    check($c->acquire(), 'the same name in database 0');
    $s->assertHeldBy($k, [Suite::token($kc), '__write__'], 'database 0 holds its own lock');
    $a->release();
    eq(0, $r3->exists($k), 'EXISTS in database 3 after release');
    eq(1, $s->r->exists($k), 'EXISTS in database 0 after database 3 released');
    $c->release();
    eq(0, $s->r->exists($k), 'EXISTS in database 0 after release');
};

$tests['auth_acl_user'] = function (Suite $s) {
    // AUTH user pass at connect (Predis's `username`/`password`, phpredis's auth([u, p])).
    $user = 'phplock_' . bin2hex(random_bytes(4));
    $ok = raw($s->r, 'ACL', 'SETUSER', $user, 'on', '>secret', '~' . $s->prefix . '*', '~symfony_check_support_time', '+@all');
    check($ok === true || (string) $ok === 'OK', 'ACL SETUSER: ' . show($ok));
    try {
        $c = $s->conn(null, ['username' => $user, 'password' => 'secret']);
        eq($user, (string) raw($c, 'ACL', 'WHOAMI'), 'ACL WHOAMI');
        $k = $s->key();
        $f = new LockFactory(new RedisStore($c));
        [$a, $ka] = $s->lock($f, $k, 5.0);
        check($a->acquire(), 'acquire as an ACL user');
        $s->assertHeldBy($k, [Suite::token($ka), '__write__'], 'held by the ACL user');
        $a->refresh(3.0);
        $a->release();
        eq(0, $s->r->exists($k), 'EXISTS after release');
        // Outside its key patterns the user cannot lock (a script error,
        // wrapped by Symfony).
        $other = new LockFactory(new RedisStore($c));
        throws(\Symfony\Component\Lock\Exception\LockAcquiringException::class,
            fn () => $other->createLock('phplock-outside-' . bin2hex(random_bytes(4)), 5.0)->acquire(), 'acquire outside ~patterns');
    } finally {
        raw($s->r, 'ACL', 'DELUSER', $user);
    }
};

const WORKERS = 6;
const ITERATIONS = 20;

$tests['contention_processes'] = function (Suite $s) {
    $res = $s->key();
    $counter = $s->key('counter');
    $marker = $s->key('marker');
    $s->r->set($counter, '0');
    $t0 = microtime(true);
    $ws = [];
    for ($i = 0; $i < WORKERS; $i++) {
        $ws[$i] = new Worker([$s->lib, 'worker-contend', $s->addr, $res, $counter, $marker, (string) ITERATIONS, "w$i"]);
    }
    $fails = [];
    foreach ($ws as $i => $w) {
        $code = $w->wait(max(1.0, 15.0 - (microtime(true) - $t0)));
        $out = trim($w->output());
        if ($code !== 0 || !str_contains($out, 'done ' . ITERATIONS)) {
            $fails[] = "worker $i: exit " . show($code) . ": $out";
        }
    }
    $elapsed = microtime(true) - $t0;
    eq([], $fails, 'worker failures');
    eq((string) (WORKERS * ITERATIONS), get_str($s->r, $counter), 'counter');
    eq(0, $s->r->exists($marker), 'the marker after the run');
    eq(0, $s->r->exists($res), 'the lock after the run');
    printf("    contention: %d processes x %d cycles in %.2fs\n", WORKERS, ITERATIONS, $elapsed);
};

// CombinedStore (ConsensusStrategy) over three servers: a store per server,
// each on its own connection. These tests run last, in this order: the
// last two SHUTDOWN the third and then the second server.

/** A factory over a CombinedStore of new connections to $s->addrs. */
function combined(Suite $s): LockFactory
{
    $stores = [];
    foreach ($s->addrs as $a) {
        $stores[] = new RedisStore(down($a) ? unconnected($s->lib, $a) : $s->conn($a));
    }
    return new LockFactory(new CombinedStore($stores, new ConsensusStrategy()));
}

/** The servers this run has shut down, by address. */
function down(?string $addr = null, bool $mark = false): bool
{
    static $down = [];
    if ($mark) {
        $down[$addr] = true;
    }
    return isset($down[$addr]);
}

/** A client of a server that is down: every command fails. */
function unconnected(string $lib, string $addr)
{
    if ($lib === 'phpredis') {
        return new \Redis(); // connect() would throw; eval says "Redis server went away"
    }
    [$host, $port] = split_addr($addr);
    return new \Predis\Client(['host' => $host, 'port' => $port, 'timeout' => IO_TIMEOUT]);
}

/** One checking connection per server. */
function combined_conns(Suite $s): array
{
    if (count($s->addrs) !== 3) {
        throw new Skipped('TUMBLER_ADDRS does not name three servers');
    }
    return array_map(fn ($a) => down($a) ? null : $s->conn($a), $s->addrs);
}

function shutdown_server(Suite $s, $conn, string $addr): void
{
    try {
        raw($conn, 'SHUTDOWN', 'NOSAVE'); // no reply: the connection closes
    } catch (Throwable $e) {
    }
    down($addr, true);
    // Down means a new connection is refused.
    check(eventually(5.0, function () use ($s, $addr) {
        try {
            $c = connect($s->lib, $addr);
            $c->ping();
            disconnect($c);
            return false;
        } catch (Throwable $e) {
            return true;
        }
    }), "$addr still answers after SHUTDOWN");
}

$tests['combined_all_up'] = function (Suite $s) {
    $rs = combined_conns($s);
    $k = $s->key();
    [$a, $ka] = $s->lock(combined($s), $k, 5.0);
    check($a->acquire(), 'acquire on three');
    foreach ($rs as $i => $r) {
        $s->assertHeldBy($k, [Suite::token($ka), '__write__'], "server $i", $r);
        between(4000, 5000, $r->pttl($k), "PTTL on server $i");
    }
    [$b] = $s->lock(combined($s), $k, 5.0);
    check(!$b->acquire(), 'a second combined lock');
    check($a->isAcquired(), 'isAcquired');
    check(!$b->isAcquired(), 'the second isAcquired');
    $a->refresh(8.0);
    foreach ($rs as $i => $r) {
        between(7000, 8000, $r->pttl($k), "PTTL on server $i after refresh(8)");
    }
    $a->release();
    foreach ($rs as $i => $r) {
        eq(0, $r->exists($k), "EXISTS on server $i after release");
    }
    check($b->acquire(), 'the second combined lock after release');
    $b->release();
};

$tests['combined_minority_and_majority_held'] = function (Suite $s) {
    $rs = combined_conns($s);
    $k = $s->key();
    // Another owner holds the resource on server 0 only: 2 of 3 still grant.
    [$x] = $s->lock($s->factory($s->addrs[0]), $k, 10.0);
    check($x->acquire(), 'a single-server lock on server 0');
    [$a, $ka] = $s->lock(combined($s), $k, 5.0);
    check($a->acquire(), 'combined with server 0 taken');
    check($a->isAcquired(), 'isAcquired with server 0 taken');
    eq(null, score($rs[0], $k, Suite::token($ka)), 'the combined token on server 0');
    $s->assertHeldBy($k, [Suite::token($ka), '__write__'], 'server 1', $rs[1]);
    $s->assertHeldBy($k, [Suite::token($ka), '__write__'], 'server 2', $rs[2]);
    $a->release();
    check($x->isAcquired(), 'the single-server lock after the combined release');
    eq(0, $rs[1]->exists($k), 'EXISTS on server 1 after the combined release');
    // Held on servers 0 and 1: refused, and the partial lock on 2 undone.
    [$y] = $s->lock($s->factory($s->addrs[1]), $k, 10.0);
    check($y->acquire(), 'a single-server lock on server 1');
    [$b] = $s->lock(combined($s), $k, 5.0);
    check(!$b->acquire(), 'combined with servers 0 and 1 taken');
    eq(0, $rs[2]->exists($k), 'EXISTS on server 2 after the refused combined lock');
    check($x->isAcquired(), 'the lock on server 0 after the refusal');
    check($y->isAcquired(), 'the lock on server 1 after the refusal');
    $x->release();
    $y->release();
};

$tests['combined_one_down'] = function (Suite $s) {
    $rs = combined_conns($s);
    $k = $s->key();
    // Both combined stores connect now, before server 2 goes away.
    [$a, $ka] = $s->lock(combined($s), $k, 5.0, false);
    [$b, $kb] = $s->lock(combined($s), $k, 5.0, false);
    check($a->acquire(), 'acquire with all up');
    shutdown_server($s, $rs[2], $s->addrs[2]);
    check($a->isAcquired(), 'isAcquired with server 2 down');
    $a->refresh(8.0);
    between(7000, 8000, $rs[0]->pttl($k), 'PTTL on server 0 after refresh, server 2 down');
    between(7000, 8000, $rs[1]->pttl($k), 'PTTL on server 1 after refresh, server 2 down');
    check(!$b->acquire(), 'a second combined lock with server 2 down');
    $s->assertHeldBy($k, [Suite::token($ka), '__write__'], 'server 0 after the refusal', $rs[0]);
    $a->release();
    eq(0, $rs[0]->exists($k), 'EXISTS on server 0 after release');
    eq(0, $rs[1]->exists($k), 'EXISTS on server 1 after release');
    check($b->acquire(), 'the second lock after release, server 2 down');
    $s->assertHeldBy($k, [Suite::token($kb), '__write__'], 'server 0', $rs[0]);
    $s->assertHeldBy($k, [Suite::token($kb), '__write__'], 'server 1', $rs[1]);
    // A store made now, with an unconnected client for the down server.
    [$c] = $s->lock(combined($s), $k, 5.0);
    check(!$c->acquire(), 'a new combined store while the lock is held');
    $b->release();
    check($c->acquire(), 'a new combined store, server 2 down');
    $c->release();
};

$tests['combined_two_down'] = function (Suite $s) {
    $rs = combined_conns($s);
    $k = $s->key();
    if (!down($s->addrs[2])) {
        throw new Skipped('runs after combined_one_down, which shuts server 2 down');
    }
    [$a, $ka] = $s->lock(combined($s), $k, 5.0, false);
    [$b] = $s->lock(combined($s), $k, 5.0, false);
    check($a->acquire(), 'acquire with server 2 down');
    shutdown_server($s, $rs[1], $s->addrs[1]);
    // One of three: no longer held, cannot be refreshed, nor taken again.
    check(!$a->isAcquired(), 'isAcquired with two down');
    throws(LockConflictedException::class, fn () => $a->refresh(8.0), 'refresh with two down');
    eq(0, $rs[0]->exists($k), 'EXISTS on server 0 after the failed refresh (it deletes)');
    check(!$b->acquire(), 'acquire with two down');
    eq(0, $rs[0]->exists($k), 'EXISTS on server 0 after the refused acquire');
    check(!$b->acquire(), 'acquire with two down, again');
    // Server 0 alone still works as a single store.
    [$x] = $s->lock($s->factory($s->addrs[0]), $k, 5.0);
    check($x->acquire(), 'a single-server lock on server 0');
    $x->release();
};

// ------------------------------------------------------------------ workers

/** worker-wait ADDR RESOURCE: blocking acquire, print when it got it. */
function worker_wait(string $lib, string $addr, string $res): int
{
    $r = connect($lib, $addr);
    $key = new Key($res);
    $lock = (new LockFactory(new RedisStore($r)))->createLockFromKey($key, 10.0, false);
    printf("waiting %.6f\n", microtime(true));
    $lock->acquire(true);
    printf("acquired %.6f\n", microtime(true));
    $m = members($r, $res);
    $want = [$key->getState(RedisStore::class), '__write__'];
    sort($want);
    echo $m === $want ? "owner ok\n" : 'owner wrong: ' . show($m) . "\n";
    $lock->release();
    return 0;
}

/**
 * worker-contend ADDR RESOURCE COUNTER MARKER N ID: N times, take the lock
 * and increment COUNTER by a read, a pause and a write; MARKER (SET NX,
 * checked and deleted before release) catches an overlapping holder.
 */
function worker_contend(string $lib, string $addr, string $res, string $counter, string $marker, int $n, string $id): int
{
    $r = connect($lib, $addr);
    $f = new LockFactory(new RedisStore($r));
    $end = microtime(true) + 12.0; // within the parent's 15 s
    for ($i = 0; $i < $n; $i++) {
        $lock = $f->createLock($res, 10.0, false);
        // Non-blocking tries with a short random pause: acquire(true)
        // would poll only every 100 ms.
        while (!$lock->acquire()) {
            if (microtime(true) > $end) {
                echo "$id: gave up waiting at cycle $i\n";
                return 1;
            }
            usleep(random_int(200, 2000));
        }
        if (!set_nx($r, $marker, $id)) {
            echo "$id: OVERLAP at cycle $i: the marker is held by " . show(get_str($r, $marker)) . "\n";
            return 3;
        }
        $v = (int) get_str($r, $counter);
        usleep(300);
        $r->set($counter, (string) ($v + 1));
        $holder = get_str($r, $marker);
        if ($holder !== $id) {
            echo "$id: OVERLAP at cycle $i: the marker became " . show($holder) . "\n";
            return 3;
        }
        $r->del($marker);
        $lock->release();
    }
    echo "done $n\n";
    return 0;
}

// --------------------------------------------------------------------- main

function usage(): int
{
    fwrite(STDERR, "usage: TUMBLER_ADDR=host:port [TUMBLER_ADDRS=a,b,c] php lock_test.php phpredis|predis [test ...]\n"
        . "       php lock_test.php probe\n");
    return 2;
}

function main(array $argv, array $tests): int
{
    $lib = $argv[1] ?? '';
    if ($lib === 'probe') {
        printf("PHP %s, phpredis %s, Predis %s\n", PHP_VERSION, phpversion('redis'), \Predis\Client::VERSION);
        return 0;
    }
    if (!in_array($lib, LIBS, true)) {
        return usage();
    }
    $mode = $argv[2] ?? '';
    if ($mode === 'worker-wait') {
        return worker_wait($lib, $argv[3], $argv[4]);
    }
    if ($mode === 'worker-contend') {
        return worker_contend($lib, $argv[3], $argv[4], $argv[5], $argv[6], (int) $argv[7], $argv[8]);
    }
    $addr = getenv('TUMBLER_ADDR') ?: '';
    if ($addr === '') {
        fwrite(STDERR, "TUMBLER_ADDR (host:port) is not set\n");
        return 2;
    }
    $addrs = array_values(array_filter(explode(',', getenv('TUMBLER_ADDRS') ?: '')));
    $only = array_slice($argv, 2);
    foreach ($only as $name) {
        if (!isset($tests[$name])) {
            fwrite(STDERR, "no test $name\n");
            return 2;
        }
    }
    $s = new Suite($lib, $addr, $addrs);
    $n = ['PASS' => 0, 'FAIL' => 0, 'SKIP' => 0];
    $t0 = microtime(true);
    foreach ($tests as $name => $fn) {
        if ($only && !in_array($name, $only, true)) {
            continue;
        }
        $n[$s->run($name, $fn)]++;
    }
    printf("ran %d tests in %.2fs\n", array_sum($n), microtime(true) - $t0);
    printf("%s: %d passed, %d failed, %d skipped\n", $lib, $n['PASS'], $n['FAIL'], $n['SKIP']);
    return $n['FAIL'] === 0 ? 0 : 1;
}

exit(main($argv, $tests));
