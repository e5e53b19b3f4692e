/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx policy: where a message goes eagerly, by single copy or by double copy.
 *
 * One decision, per peer and size range, by measurement (btl_smx_choice.h): the receiver
 * times the messages of each sender, per way they came, and tells the sender the way it
 * wants (a word, SMX_KIND_WANT); the sender sets its class's eager limit for the message
 * at hand from it, and pushes a rendezvous ahead where it says double copy. Where a peer
 * starts: the class's prior (a shared cache: eagerly up to a fragment, double copy above;
 * otherwise single copy from 4 KiB), unless a parameter pins a class's eager limit or its
 * single-copy threshold. docs/using-smx.md ("How btl/smx decides") has the rules and why.
 */
#ifndef MCA_BTL_SMX_POLICY_H
#define MCA_BTL_SMX_POLICY_H

#include "btl_smx.h"

#include "btl_smx_clock.h"

BEGIN_C_DECLS

struct smx_policy {
    bool built;
    size_t eager_pin[SMX_CLASS_COUNT];   /* a class's eager limit set by a parameter; 0: measured */
    int single_pin[SMX_CLASS_COUNT];     /* its single-copy threshold set by one (bytes, or
                                            SMX_NEVER); SMX_MEASURED: measured */
    size_t eager_most;      /* the largest eager message (a fragment) */
    size_t late_limit;      /* ... to a late receiver (btl_smx_skew.c); eager_most if none */
    int pieces_max;         /* a peer's get pieces of mine in shared memory at a time */
};

extern struct smx_policy mca_btl_smx_policy;

/* Build the policy once, at the first add_procs, and give every module its limits. */
void mca_btl_smx_policy_setup(void);
/* A peer's choice and the word its sender side starts from (its class is known). */
void mca_btl_smx_policy_start(mca_btl_smx_endpoint_t *ep);
/* Publish the policy and the class of every attached peer in btl_smx_policy (and print
 * it at btl_base_verbose info when it changed). */
void mca_btl_smx_policy_publish(void);

/* Sender: a message to ep is at hand: time it? A clock read can cost a tenth of a 4 KiB
 * message in cache (docs/design.md, "The switch"): eager messages one in 16, and
 * every one for a while after the receiver's word changed (a try is under way); every
 * rendezvous (the receiver also learns from it how long the message waited for it:
 * btl_smx_skew.c). 0: not timed. */
static inline uint32_t mca_btl_smx_stamp(mca_btl_smx_endpoint_t *ep, bool rendezvous)
{
    if (rendezvous || 0 != ep->stamp_all) {
        if (0 != ep->stamp_all) {
            ep->stamp_all--;
        }
        return mca_btl_smx_stamp_now();
    }
    return 0 == (++ep->stamp_tick & 15u) ? mca_btl_smx_stamp_now() : 0;
}

/* Sender: the largest eager message to ep that may stay in place (its receiver copies
 * from its mapping of my buffer: SMX_KIND_IN_PLACE), where its word says single copy;
 * 0: none. Only through my ring to it, whose reader's count completes the fragment. Its
 * data needs no room in shared memory, so it may pass a fragment: up to SMX_IN_PLACE_MAX
 * (the 64 KiB range; docs/design.md, "Eager messages in place"), beyond which a
 * rendezvous's handshake is a small part of a single copy, and ob1 buffers a message
 * that comes before its receive. */
#define SMX_IN_PLACE_MAX ((size_t) 131072)
/* (a peer of my job that maps my memory, through my ring to it: a process of another job
 * may not have found my export) */
static inline bool mca_btl_smx_in_place_peer(const mca_btl_smx_endpoint_t *ep)
{
    return mca_btl_smx_component.in_place && NULL != ep->smsc_endpoint && NULL != ep->out
           && ep->peer_local_rank >= 0;
}

static inline size_t mca_btl_smx_in_place_most(const mca_btl_smx_endpoint_t *ep)
{
    return mca_btl_smx_in_place_peer(ep)
                   && SMX_MEASURED == mca_btl_smx_policy.single_pin[ep->cls]
               ? SMX_IN_PLACE_MAX
               : 0;
}

/* Sender: does an eager message of 'size' bytes (ob1's header included) to ep stay in
 * place? Where its word says single copy for its size, or from the single-copy threshold
 * a parameter sets. */
static inline bool mca_btl_smx_in_place(const mca_btl_smx_endpoint_t *ep, size_t size)
{
    const int pin = mca_btl_smx_policy.single_pin[ep->cls];
    const int r = smx_choice_range_of(size);

    /* (a late receiver gets copies: in place, I would wait for it) */
    if (!mca_btl_smx_in_place_peer(ep) || r < 0 || 0 != (ep->want & SMX_CHOICE_LATE)) {
        return false;
    }
    if (SMX_MEASURED != pin) {
        return SMX_NEVER != pin && size >= (size_t) pin;
    }
    return SMX_WAY_SINGLE == SMX_CHOICE_WAY(ep->want, r)
           && smx_choice_eagerly(ep->want, r, SMX_IN_PLACE_MAX);
}

/* Sender: ob1 hands me a message of 'size' bytes for ep (eagerly, or the header of a
 * rendezvous); set the class's eager limit, which ob1 reads for its next message, as the
 * peer's word says for messages of this size. */
static inline void mca_btl_smx_eager_follow(mca_btl_smx_endpoint_t *ep, size_t size)
{
    const struct smx_policy *p = &mca_btl_smx_policy;
    mca_btl_smx_module_t *m = ep->module;
    size_t limit;

    if (size < SMX_CHOICE_MIN || NULL == m || 0 != p->eager_pin[m->cls]) {
        return;
    }
    limit = SMX_SKEW_ALWAYS == mca_btl_smx_component.skew
                ? p->late_limit
                : smx_choice_eager_limit(ep->want, size, p->eager_most, p->late_limit,
                                         mca_btl_smx_in_place_most(ep));
    if (limit != m->super.btl_eager_limit) {
        m->super.btl_eager_limit = limit;
    }
}

/* Sender: push a rendezvous of 'size' bytes to ep ahead of its get (a double copy)? */
static inline bool mca_btl_smx_push_wanted(const mca_btl_smx_endpoint_t *ep, size_t size)
{
    const int pin = mca_btl_smx_policy.single_pin[ep->cls];
    const int r = smx_choice_range_of(size);

    if (SMX_MEASURED != pin) {
        return NULL == ep->smsc_endpoint || SMX_NEVER == pin || size < (size_t) pin;
    }
    return NULL == ep->smsc_endpoint || !SMX_CHOICE_SINGLE(ep->want, r < 0 ? 0 : r);
}

/* Receiver: does my get of 'size' bytes from ep (not pushed) go by single copy? */
static inline bool mca_btl_smx_single_copy(const mca_btl_smx_endpoint_t *ep, size_t size)
{
    const int pin = mca_btl_smx_policy.single_pin[ep->cls];

    if (NULL == ep->smsc_endpoint) {
        return false;
    }
    if (SMX_MEASURED != pin) {
        return SMX_NEVER != pin && size >= (size_t) pin;
    }
    return smx_choice_single(&ep->choice, size);
}

/* Receiver: a message of 'size' bytes from ep came 'way', stamped by its sender (0: not
 * timed), and its data is in place now: measure it, and tell the sender if its way
 * changes. */
void mca_btl_smx_measured(mca_btl_smx_endpoint_t *ep, size_t size, enum smx_way way,
                          uint32_t stamp);
/* Receiver: tell ep my word now, if it is not the one it has (skew too: btl_smx_skew.c). */
void mca_btl_smx_want_say(mca_btl_smx_endpoint_t *ep);
/* Sender: ep's word (SMX_KIND_WANT); false: malformed. */
bool mca_btl_smx_want_heard(mca_btl_smx_endpoint_t *ep, const void *payload, size_t len);

END_C_DECLS

#endif /* MCA_BTL_SMX_POLICY_H */
