package training

// TopK returns the k of the top-k accuracy that training with c records next to the accuracy
// (History.TopK, HistoryPoint.TopK): 5 on a dataset of more than 10 classes with a head wider
// than 5 (CIFAR-100), else 0.
func (c Config) TopK() int { return c.topK() }
