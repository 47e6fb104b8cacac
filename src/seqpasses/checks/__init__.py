"""The two gates of seqpasses' promise: what it takes in (:mod:`.external`, the data gate;
:mod:`.admission`) and what it hands out (:mod:`.selfcheck`)."""
