/* The collector example in README.md: a kernel walks a collected tree. */
#include <adsm.h>
#include <stdio.h>

typedef struct Node {
    long key;
    struct Node *left, *right; /* ordinary pointers, valid on the device too */
} Node;

static Node *insert(Node *t, long key) {
    if (!t) {
        Node *n = adsmGcAlloc(sizeof(Node)); /* zeroed, collected, shared */
        if (n) n->key = key;
        return n;
    }
    if (key < t->key) t->left = insert(t->left, key);
    else t->right = insert(t->right, key);
    return t;
}

/* One thread per query: is queries[i] in the tree? */
static void lookup(const adsmThreadIdx *t, void **args) {
    const Node *root = *(const Node **)args[0];
    const long *queries = *(const long **)args[1];
    int *found = *(int **)args[2];
    unsigned i = t->blockIdx.x * t->blockDim.x + t->threadIdx.x;
    if (i >= *(unsigned *)args[3]) return;
    const Node *n = root;
    while (n && n->key != queries[i]) n = queries[i] < n->key ? n->left : n->right;
    found[i] = n != NULL;
}

int main(void) {
    unsigned n = 4096;
    Node *root = NULL;
    for (long i = 0; i < 100000; ++i) root = insert(root, (i * 7919) % 100003);
    long *queries = adsmGcAllocAtomic(n * sizeof(long)); /* no pointers inside: never scanned */
    int *found = adsmGcAllocAtomic(n * sizeof(int));
    if (!root || !queries || !found) {
        fprintf(stderr, "adsmGcAlloc: %s\n", adsmGetLastErrorDetail());
        return 1;
    }
    for (unsigned i = 0; i < n; ++i) queries[i] = (long)i * 25;

    size_t sizes[] = {sizeof(Node *), sizeof(long *), sizeof(int *), sizeof(unsigned)};
    adsmKernel_t k;
    if (adsmRegisterKernel("lookup", lookup, 4, sizes, &k) != adsmSuccess) return 1;
    void *args[] = {&root, &queries, &found, &n};
    adsmDim3 grid = {(n + 127) / 128, 1, 1}, block = {128, 1, 1};
    if (adsmCall(k, grid, block, args) != adsmSuccess) return 1;
    /* The kernel runs; collecting now does not wait for it, and frees
       nothing it can reach. */
    for (int i = 0; i < 100000; ++i) adsmGcAlloc(64); /* garbage */
    adsmGcCollect();
    if (adsmSync() != adsmSuccess) {
        fprintf(stderr, "kernel failed: %s\n", adsmGetLastErrorDetail());
        return 1;
    }

    unsigned hits = 0;
    for (unsigned i = 0; i < n; ++i) {
        long q = queries[i];
        int expected = 0;
        for (const Node *m = root; m && !expected; m = q < m->key ? m->left : m->right) expected = m->key == q;
        if (found[i] != expected) {
            fprintf(stderr, "query %ld: wrong answer\n", q);
            return 1;
        }
        hits += found[i];
    }
    adsmGcStats s;
    adsmGcGetStats(&s);
    printf("%u of %u keys found by the kernel; %llu collections, longest pause %.2f ms\n", hits, n,
           (unsigned long long)s.collections, s.max_pause_ns / 1e6);
    return 0;
}
