package data

import (
	"fmt"
	"strings"
)

// Image geometry shared by CIFAR-10 and CIFAR-100.
const (
	// ImageHeight is the height of a CIFAR image in pixels.
	ImageHeight = 32
	// ImageWidth is the width of a CIFAR image in pixels.
	ImageWidth = 32
	// ImageChannels is the number of colour channels (R, G, B).
	ImageChannels = 3
	// ImageBytes is the number of pixel bytes in one record: 3 channel planes of 32x32.
	ImageBytes = ImageHeight * ImageWidth * ImageChannels
)

// LabelSet selects which CIFAR-100 label a Spec trains on. CIFAR-10 has only LabelsFine.
type LabelSet int

const (
	// LabelsFine is the default label set: the 10 CIFAR-10 classes or the 100 CIFAR-100 classes.
	LabelsFine LabelSet = iota
	// LabelsCoarse selects CIFAR-100's 20 superclasses.
	LabelsCoarse
)

// String returns "fine" or "coarse".
func (l LabelSet) String() string {
	if l == LabelsCoarse {
		return "coarse"
	}
	return "fine"
}

// ParseLabelSet parses "fine" (or "") and "coarse".
func ParseLabelSet(s string) (LabelSet, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "fine":
		return LabelsFine, nil
	case "coarse":
		return LabelsCoarse, nil
	}
	return LabelsFine, fmt.Errorf("data: unknown label set %q: use \"fine\" or \"coarse\"", s)
}

// Spec describes one CIFAR dataset variant: its classes, the files of its binary
// distribution, the official archive and the image statistics used for normalisation.
// Use CIFAR10, CIFAR100 or SpecByName to get one; the zero value is not usable.
type Spec struct {
	// Name is "cifar10" or "cifar100".
	Name string
	// Labels is the label set used (CIFAR-100 only; always LabelsFine for CIFAR-10).
	Labels LabelSet
	// NumClasses is the number of classes of the chosen label set: 10, 100 (fine) or 20 (coarse).
	NumClasses int
	// ClassNames has NumClasses names, indexed by label.
	ClassNames []string

	// LabelBytes is the number of label bytes that precede the pixels in each record:
	// 1 for CIFAR-10, 2 (coarse, fine) for CIFAR-100.
	LabelBytes int
	// LabelByte is the index, within the label bytes, of the label this Spec uses.
	LabelByte int
	// MaxLabels holds, per label byte, the number of valid values of that byte
	// (CIFAR-100: {20, 100}). A record with a label byte outside its range is rejected.
	MaxLabels []int

	// Dir is the folder the official archive extracts to, e.g. "cifar-10-batches-bin".
	Dir string
	// TrainFiles and TestFiles are the binary files of each split, relative to Dir.
	TrainFiles, TestFiles []string
	// TrainSize and TestSize are the number of records in the official splits.
	TrainSize, TestSize int

	// ArchiveURL is the official download address, ArchiveName its file name and
	// ArchiveSHA256 the hex SHA-256 the downloaded archive must have.
	ArchiveURL, ArchiveName, ArchiveSHA256 string

	// Mean and Std are the per-channel (R, G, B) statistics of the training split, on pixel
	// values scaled to [0, 1], used to normalise images.
	Mean, Std [ImageChannels]float32
}

// RecordBytes is the size in bytes of one record: the label bytes followed by the pixels.
func (s Spec) RecordBytes() int { return s.LabelBytes + ImageBytes }

// ID names the spec with its label set where it matters: "cifar10", "cifar100" or "cifar100-coarse".
func (s Spec) ID() string {
	if s.Name == "cifar100" && s.Labels == LabelsCoarse {
		return "cifar100-coarse"
	}
	return s.Name
}

// MarshalText implements encoding.TextMarshaler: a Spec travels as its ID ("cifar10",
// "cifar100", "cifar100-coarse"; "" for the zero Spec), as a run's settings record it.
func (s Spec) MarshalText() ([]byte, error) { return []byte(s.ID()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: the Spec of an ID (SpecByName), or the
// zero Spec for "".
func (s *Spec) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*s = Spec{}
		return nil
	}
	spec, err := SpecByName(string(text), "")
	if err != nil {
		return err
	}
	*s = spec
	return nil
}

// String implements fmt.Stringer.
func (s Spec) String() string {
	return fmt.Sprintf("%s (%d classes)", s.ID(), s.NumClasses)
}

// ClassName returns the name of a label, or a placeholder naming the bad value.
func (s Spec) ClassName(label int) string {
	if label < 0 || label >= len(s.ClassNames) {
		return fmt.Sprintf("<label %d out of range [0, %d)>", label, len(s.ClassNames))
	}
	return s.ClassNames[label]
}

// CIFAR10 returns the Spec of CIFAR-10.
func CIFAR10() Spec {
	return Spec{
		Name:          "cifar10",
		Labels:        LabelsFine,
		NumClasses:    10,
		ClassNames:    append([]string(nil), cifar10Classes...),
		LabelBytes:    1,
		LabelByte:     0,
		MaxLabels:     []int{10},
		Dir:           "cifar-10-batches-bin",
		TrainFiles:    []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"},
		TestFiles:     []string{"test_batch.bin"},
		TrainSize:     50000,
		TestSize:      10000,
		ArchiveURL:    "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz",
		ArchiveName:   "cifar-10-binary.tar.gz",
		ArchiveSHA256: "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd",
		Mean:          [3]float32{0.4914, 0.4822, 0.4465},
		Std:           [3]float32{0.2470, 0.2435, 0.2616},
	}
}

// CIFAR100 returns the Spec of CIFAR-100 with the given label set (100 fine or 20 coarse classes).
func CIFAR100(labels LabelSet) Spec {
	s := Spec{
		Name:          "cifar100",
		Labels:        labels,
		LabelBytes:    2,
		MaxLabels:     []int{20, 100},
		Dir:           "cifar-100-binary",
		TrainFiles:    []string{"train.bin"},
		TestFiles:     []string{"test.bin"},
		TrainSize:     50000,
		TestSize:      10000,
		ArchiveURL:    "https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz",
		ArchiveName:   "cifar-100-binary.tar.gz",
		ArchiveSHA256: "58a81ae192c23a4be8b1804d68e518ed807d710a4eb253b1f2a199162a40d8ec",
		Mean:          [3]float32{0.5071, 0.4865, 0.4409},
		Std:           [3]float32{0.2673, 0.2564, 0.2762},
	}
	if labels == LabelsCoarse {
		s.NumClasses, s.LabelByte = 20, 0
		s.ClassNames = append([]string(nil), cifar100CoarseClasses...)
	} else {
		s.Labels = LabelsFine
		s.NumClasses, s.LabelByte = 100, 1
		s.ClassNames = append([]string(nil), cifar100FineClasses...)
	}
	return s
}

// Names are the datasets' names, as SpecByName reads them: "cifar10" and "cifar100".
func Names() []string { return []string{CIFAR10().Name, CIFAR100(LabelsFine).Name} }

// SpecByName returns the Spec for "cifar10" or "cifar100" (also accepted: "cifar-10",
// "cifar-100", "cifar100-coarse"). labels is "fine", "coarse" or "" and only matters for CIFAR-100.
func SpecByName(name, labels string) (Spec, error) {
	set, err := ParseLabelSet(labels)
	if err != nil {
		return Spec{}, err
	}
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "cifar10", "cifar-10":
		if set != LabelsFine {
			return Spec{}, fmt.Errorf("data: dataset cifar10 has only fine labels, got label set %q: drop the labels option or use cifar100", labels)
		}
		return CIFAR10(), nil
	case "cifar100", "cifar-100":
		return CIFAR100(set), nil
	case "cifar100-coarse":
		return CIFAR100(LabelsCoarse), nil
	}
	return Spec{}, fmt.Errorf("data: unknown dataset %q: use %q or %q", name, Names()[0], Names()[1])
}

var cifar10Classes = []string{
	"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
}

var cifar100CoarseClasses = []string{
	"aquatic_mammals", "fish", "flowers", "food_containers", "fruit_and_vegetables",
	"household_electrical_devices", "household_furniture", "insects", "large_carnivores",
	"large_man-made_outdoor_things", "large_natural_outdoor_scenes", "large_omnivores_and_herbivores",
	"medium_mammals", "non-insect_invertebrates", "people", "reptiles", "small_mammals", "trees",
	"vehicles_1", "vehicles_2",
}

var cifar100FineClasses = []string{
	"apple", "aquarium_fish", "baby", "bear", "beaver", "bed", "bee", "beetle", "bicycle", "bottle",
	"bowl", "boy", "bridge", "bus", "butterfly", "camel", "can", "castle", "caterpillar", "cattle",
	"chair", "chimpanzee", "clock", "cloud", "cockroach", "couch", "crab", "crocodile", "cup", "dinosaur",
	"dolphin", "elephant", "flatfish", "forest", "fox", "girl", "hamster", "house", "kangaroo", "keyboard",
	"lamp", "lawn_mower", "leopard", "lion", "lizard", "lobster", "man", "maple_tree", "motorcycle", "mountain",
	"mouse", "mushroom", "oak_tree", "orange", "orchid", "otter", "palm_tree", "pear", "pickup_truck", "pine_tree",
	"plain", "plate", "poppy", "porcupine", "possum", "rabbit", "raccoon", "ray", "road", "rocket",
	"rose", "sea", "seal", "shark", "shrew", "skunk", "skyscraper", "snail", "snake", "spider",
	"squirrel", "streetcar", "sunflower", "sweet_pepper", "table", "tank", "telephone", "television", "tiger", "tractor",
	"train", "trout", "tulip", "turtle", "wardrobe", "whale", "willow_tree", "wolf", "woman", "worm",
}
